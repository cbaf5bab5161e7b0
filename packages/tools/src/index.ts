// @agentmesh/tools: the tool registry, the safe executor every tool call goes through, the
// sandboxed code runners, the built-in tools, MCP servers as a source of tools, and the knowledge
// graph (triples) the graph role answers from.
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
  createLocalSessionCounter,
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
export {
  builtinTools,
  DEFAULT_TOOL_ROLES,
  type BuiltinTools,
  type BuiltinToolsOptions,
  type BuiltinToolName,
} from "./builtins/builtin-tools.js";
export { createCalculatorTool, type CalculatorOptions } from "./builtins/calculator.js";
export { CALC_NAMES, CALC_PRECISION, evaluateExact, sameNumber, type CalcResult } from "./builtins/exact.mjs";
export { createFileReadTool, type FileReadOptions } from "./builtins/file-read.js";
export { createCorpusSearchTool, type CorpusSearch, type CorpusSearchOptions } from "./builtins/corpus-search.js";
export { createOpenAIEmbeddings, type Embedder, type OpenAIEmbeddingsOptions } from "./builtins/embeddings.js";
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
export {
  createOfflineImages,
  createOpenAIImages,
  imageUrlProblem,
  IMAGE_SIZES,
  IMAGE_URL_MAX_CHARS,
  type GeneratedImage,
  type GeneratedImages,
  type ImageProvider,
  type ImageSize,
  type OpenAIImagesOptions,
} from "./builtins/images.js";
export { createAnalyzeImageTool, createGenerateImageTool, type ImageToolOptions } from "./builtins/image-tools.js";
export type { ComputePool } from "./compute-pool.js";
export { parseMcpServers, type McpServerConfig } from "./mcp/config.js";
export {
  createMcpClient,
  type McpCallOptions,
  type McpClient,
  type McpClientOptions,
  type McpToolInfo,
} from "./mcp/client.js";
export { McpCallResult, McpCitation } from "./mcp/result.js";
export { mcpToolName, registerMcpTools, type McpRegistration } from "./mcp/register.js";
export { chooseMcpTool, type McpToolChoice } from "./mcp/choose.js";
export { clipText } from "./text.js";
export {
  GRAPH_MAX_RESULTS,
  loadKnowledgeGraph,
  type GraphAnswer,
  type GraphCitation,
  type GraphHit,
  type GraphQueryOptions,
  type KnowledgeGraph,
  type LoadGraphOptions,
} from "./graph/knowledge-graph.js";
export {
  GRAPH_MAX_BYTES,
  GRAPH_MAX_FILES,
  GRAPH_MAX_LINE_CHARS,
  GRAPH_MAX_TRIPLES,
  type GraphIssue,
  type GraphLimits,
  type GraphTriple,
} from "./graph/load.js";
