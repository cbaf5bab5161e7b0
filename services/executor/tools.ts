import { existsSync } from "node:fs";
import { AgentmeshError, type ExecutorLimits, type RoleName } from "@agentmesh/contracts";
import type { Logger } from "@agentmesh/service-kit";
import {
  DEFAULT_TOOL_ROLES,
  builtinTools,
  clipText,
  createBraveWebSearch,
  createMcpClient,
  createLocalSessionCounter,
  createOfflineImages,
  createOfflineWebSearch,
  createOpenAIEmbeddings,
  createOpenAIImages,
  createSafeExecutor,
  createToolRegistry,
  defineTool,
  registerMcpTools,
  type BuiltinToolName,
  type CallPolicy,
  type McpClient,
  type McpServerConfig,
  type SafeExecutor,
  type ToolCallResult,
  type ToolDefinition,
  type ToolRegistry,
} from "@agentmesh/tools";
import { z } from "zod";
import type { ExecutorConfig } from "./config.js";

/** One tool call as the executor makes it: under the step's limits, as the executor role. */
export interface ExecutorCall {
  readonly tool: string;
  readonly args: unknown;
  readonly sessionId: string;
  readonly taskId: string;
  readonly signal: AbortSignal;
  readonly limits: ExecutorLimits;
  /** The session's tool policy for this call (refused before any attempt when it says no). */
  readonly policy: CallPolicy;
  /** Tool calls the session may still make (its coordinator counts them); absent on a direct call. */
  readonly allowance?: number;
}

/** The executor's tools: the registry (for list_tools) and the call path through the safe executor. */
export interface ExecutorTools {
  readonly registry: ToolRegistry;
  call(req: ExecutorCall): Promise<ToolCallResult>;
  close(): Promise<void>;
}

/** Tool calls one session may make through this executor (each call counts once, whatever its attempts). */
const MAX_CALLS_PER_SESSION = 100;

/**
 * Test-only tools (AGENTMESH_TEST_TOOLS=1): `test_flaky` fails its first two attempts and
 * succeeds on the third; `test_slow` never answers, so every attempt times out.
 */
function testTools(): ToolDefinition[] {
  const Input = z.object({ text: z.string().min(1).max(400) });
  const Output = z.object({ echo: z.string() });
  const flaky = defineTool({
    name: "test_flaky",
    description: "Test tool: echoes its text, but fails its first two attempts of every call",
    input: Input,
    output: Output,
    allowedRoles: ["executor"],
    timeoutMs: 3000,
    retry: { initialIntervalMs: 100, maximumIntervalMs: 400 },
    execute(input, ctx) {
      if (ctx.attempt < 3)
        return Promise.reject(new AgentmeshError("tool_error", `test_flaky fails attempt ${ctx.attempt} on purpose`));
      return Promise.resolve({ echo: input.text });
    },
  });
  const slow = defineTool({
    name: "test_slow",
    description: "Test tool: never answers, so every attempt runs into its 300 ms timeout",
    input: Input,
    output: Output,
    allowedRoles: ["executor"],
    timeoutMs: 300,
    retry: { initialIntervalMs: 100, maximumIntervalMs: 400 },
    execute(_input, ctx) {
      return new Promise((_resolve, reject) =>
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error), { once: true }),
      );
    },
  });
  return [flaky, slow];
}

/**
 * A safe executor per (timeout, attempts) pair: each tool's per-attempt timeout becomes
 * min(its own, the step's timeout) and its attempts min(its own, the step's). The tools package
 * fixes both per tool at registration, so a derived registry carries the step's limits.
 */
function limitedExecutors(
  base: ToolRegistry,
  defs: readonly ToolDefinition[],
): (limits: ExecutorLimits) => SafeExecutor {
  const counter = createLocalSessionCounter();
  const cache = new Map<string, SafeExecutor>();
  return (limits) => {
    const key = `${limits.timeout_ms}/${limits.max_attempts}`;
    const hit = cache.get(key);
    if (hit) return hit;
    const limited = defs.map((d): ToolDefinition => {
      const r = base.get(d.name);
      if (!r) throw new Error(`tool ${d.name} is not registered`);
      return {
        ...d,
        execute: d.execute.bind(d),
        timeoutMs: Math.min(r.timeoutMs, limits.timeout_ms),
        retry: { ...r.retry, maxAttempts: Math.min(r.retry.maxAttempts, limits.max_attempts) },
      };
    });
    const executor = createSafeExecutor({
      registry: createToolRegistry(limited),
      counter,
      maxCallsPerSession: MAX_CALLS_PER_SESSION,
    });
    if (cache.size >= 16) cache.delete(cache.keys().next().value as string);
    cache.set(key, executor);
    return executor;
  };
}

/** The built-in tools' allow-lists with the executor role added: the executor may call every built-in tool. */
function executorRoles(): Partial<Record<BuiltinToolName, readonly RoleName[]>> {
  const roles: Partial<Record<BuiltinToolName, readonly RoleName[]>> = {};
  for (const n of Object.keys(DEFAULT_TOOL_ROLES) as BuiltinToolName[])
    roles[n] = [...new Set<RoleName>([...DEFAULT_TOOL_ROLES[n], "executor"])];
  return roles;
}

/**
 * The configured MCP servers' tools as registry definitions (`mcp.<server>.<tool>`, arguments
 * checked against the server's schema, callable by the roles its `allow` names). Each server is
 * listed once, at start; one that cannot be reached then is left out, with a warning.
 */
async function mcpTools(
  servers: readonly McpServerConfig[],
  log: Logger,
): Promise<{ defs: ToolDefinition[]; clients: McpClient[] }> {
  const scratch = createToolRegistry();
  const clients = servers.map((s) =>
    createMcpClient(s, {
      onStderr: (text) => log.debug({ server: s.name, stderr: clipText(text, 500) }, "MCP server stderr"),
    }),
  );
  const names = await Promise.all(
    clients.map(async (client) => {
      try {
        const r = await registerMcpTools(scratch, client);
        if (r.skipped.length) log.warn({ server: r.server, skipped: r.skipped }, "MCP tools left out of the registry");
        return r.registered;
      } catch (err) {
        log.warn(
          { server: client.server, msg_detail: err instanceof Error ? err.message : String(err) },
          "MCP server not reachable at start: its tools are left out",
        );
        return [];
      }
    }),
  );
  return { defs: names.flat().flatMap((n) => scratch.get(n) ?? []), clients };
}

/** Embeds the corpus in the background at start, so the first RAG step finds its vectors ready. */
async function warmCorpus(builtin: { warm(): Promise<{ ok: boolean; message: string }> }, log: Logger): Promise<void> {
  const r = await builtin.warm();
  if (r.ok) log.info({ corpus: r.message }, "corpus_search ranking");
  else log.warn({ corpus: r.message }, "corpus_search stays BM25 only until the embeddings endpoint answers");
}

/** Builds the executor's tools from configuration. Folders that do not exist are left out, with a warning. */
export async function createExecutorTools(cfg: ExecutorConfig, log: Logger): Promise<ExecutorTools> {
  const corpusDir = existsSync(cfg.corpusDir) ? cfg.corpusDir : undefined;
  if (!corpusDir) log.warn({ corpus_dir: cfg.corpusDir }, "the corpus folder does not exist: no corpus_search");
  const fileRoots = cfg.fileRoots.filter((r) => {
    if (existsSync(r)) return true;
    log.warn({ root: r }, "a file_read root does not exist; left out");
    return false;
  });
  const builtin = builtinTools({
    roles: executorRoles(),
    corpusDir,
    embedder: cfg.embeddings
      ? createOpenAIEmbeddings({
          baseUrl: cfg.embeddings.baseUrl,
          model: cfg.embeddings.model,
          ...(cfg.embeddings.apiKey ? { apiKey: cfg.embeddings.apiKey } : {}),
        })
      : null,
    ...(cfg.embeddings?.cacheDir ? { vectorsDir: cfg.embeddings.cacheDir } : {}),
    fileRoots,
    webSearch: cfg.webSearch
      ? createBraveWebSearch({ apiKey: cfg.webSearch.apiKey, baseUrl: cfg.webSearch.baseUrl })
      : createOfflineWebSearch(),
    // offered either way, as web_search is: unconfigured, both answer tool_unavailable
    images: cfg.images
      ? createOpenAIImages({
          baseUrl: cfg.images.baseUrl,
          imageModel: cfg.images.imageModel,
          visionModel: cfg.images.visionModel,
          ...(cfg.images.apiKey ? { apiKey: cfg.images.apiKey } : {}),
        })
      : createOfflineImages(),
  });
  if (corpusDir) void warmCorpus(builtin, log);
  const mcp = await mcpTools(cfg.mcpServers, log);
  const defs = [...builtin.tools, ...(cfg.testTools ? testTools() : []), ...mcp.defs];
  if (cfg.testTools) log.warn("test-only tools test_flaky and test_slow are registered (AGENTMESH_TEST_TOOLS)");
  const registry = createToolRegistry(defs);
  const executorFor = limitedExecutors(registry, defs);
  return {
    registry,
    call: (req) =>
      executorFor(req.limits).call({
        tool: req.tool,
        args: req.args,
        role: "executor",
        sessionId: req.sessionId,
        taskId: req.taskId,
        signal: req.signal,
        policy: req.policy,
        ...(req.allowance === undefined ? {} : { allowance: req.allowance }),
      }),
    async close() {
      await Promise.all([builtin.close(), ...mcp.clients.map((c) => c.close())]);
    },
  };
}
