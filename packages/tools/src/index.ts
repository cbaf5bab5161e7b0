// @agentmesh/tools: the tool registry, the safe executor every tool call goes through, the
// sandboxed code runners, the built-in tools and MCP servers as a source of tools.
export {
  createToolRegistry,
  defineTool,
  type RegisteredTool,
  type RetryPolicy,
  type ToolContext,
  type ToolDefinition,
  type ToolDescription,
  type ToolRegistry,
  type ToolRegistryOptions,
} from "./registry.js";
export {
  createSafeExecutor,
  createMemorySessionCounter,
  type SafeExecutor,
  type CallPolicy,
  type SafeExecutorOptions,
  type SessionCallCounter,
  type ToolCallRequest,
  type ToolCallResult,
} from "./executor.js";
export { ToolCallRecord } from "./record.js";
export { argsDigest } from "./digest.js";
export { createJsRunner, type JsRunnerOptions } from "./runners/run-js.js";
export { createPythonRunner, type PythonRunnerOptions } from "./runners/run-python.js";
export type { CodeRunner, CodeRunResult, RunOptions, SandboxStatus } from "./runners/types.js";
export { builtinTools, DEFAULT_TOOL_ROLES, type BuiltinTools, type BuiltinToolsOptions, type BuiltinToolName } from "./builtins/builtin-tools.js";
export { createCalculatorTool, type CalculatorOptions } from "./builtins/calculator.js";
export { CALC_NAMES, CALC_PRECISION, evaluateExact, sameNumber, type CalcResult } from "./builtins/exact.mjs";
export { createFileReadTool, type FileReadOptions } from "./builtins/file-read.js";
export { createCorpusSearchTool, type CorpusSearchOptions } from "./builtins/corpus-search.js";
export { createRunJsTool, createRunPythonTool, type CodeToolOptions } from "./builtins/code-tools.js";
export {
  createBraveWebSearch,
  createOfflineWebSearch,
  createWebSearchTool,
  type BraveWebSearchOptions,
  type WebSearchHit,
  type WebSearchProvider,
  type WebSearchToolOptions,
} from "./builtins/web-search.js";
export type { ComputePool } from "./compute-pool.js";
export { parseMcpServers, type McpServerConfig } from "./mcp/config.js";
export { createMcpClient, type McpCallOptions, type McpClient, type McpClientOptions, type McpToolInfo } from "./mcp/client.js";
export { McpCallResult, McpCitation } from "./mcp/result.js";
export { mcpToolName, registerMcpTools, type McpRegistration } from "./mcp/register.js";
export { chooseMcpTool, type McpToolChoice } from "./mcp/choose.js";
export { clipText } from "./text.js";
