import {
  AgentmeshError,
  BLACKBOARD_LIMITS,
  ToolName,
  type Citation,
  type OpRequest,
  type StepResult,
  type ToolArg,
  type ToolInfo,
  type ToolPerformanceRecord,
} from "@agentmesh/contracts";
import { clipText as clip, type ToolCallResult, type ToolRegistry } from "@agentmesh/tools";
import type { HandlerContext } from "@agentmesh/agent-kit";
import { passagesText, ragOutput, type RagSearch } from "./rag.js";
import type { ExecutorCall } from "./tools.js";

type ExecuteRequest = OpRequest<"executor", "execute">;
type Ctx = {
  readonly sessionId: string;
  readonly taskId: string;
  readonly signal: AbortSignal;
  /** Tool calls the session may still make, from the task. */
  readonly allowance?: number;
  /** The model the RAG strategy writes its answer with; absent: no model (the passages as found). */
  readonly complete?: HandlerContext["complete"];
};

const noModel: HandlerContext["complete"] = () =>
  Promise.reject(new AgentmeshError("needs_model", "no model is given to this step"));

/** The registry tool each non-tool strategy runs. */
const STRATEGY_TOOL = { rag: "corpus_search", web: "web_search" } as const;
const WEB_QUERY_MAX = 400;

/** A plan step's argument pairs as the tool's input object (a null value means "not given"). */
export function argsObject(args: readonly ToolArg[]): Record<string, unknown> {
  return Object.fromEntries(args.filter((a) => a.value !== null).map((a) => [a.name, a.value]));
}

const citation = (path: string, passage: string): Citation[] => {
  const p = clip(path, 300);
  const text = clip(passage, 500);
  return p && text ? [{ path: p, passage: text }] : [];
};

/** A tool's output as the step's text, and the sources it carries (passages, pages, files). */
export function renderOutput(tool: string, output: unknown): { text: string; citations: Citation[] } {
  const o = (output ?? {}) as Record<string, unknown>;
  if (tool.startsWith("mcp.")) {
    // an MCP server's tool: its text, and its links and resources (McpCallResult) as the sources
    const cited = (o.citations ?? []) as Array<{
      title: string;
      url: string | null;
      path: string | null;
      snippet: string;
    }>;
    return {
      text: String(o.text ?? ""),
      citations: cited.flatMap((c) => citation(c.url ?? c.path ?? "", c.snippet || c.title)).slice(0, 10),
    };
  }
  switch (tool) {
    case "corpus_search": {
      const hits = (o.results ?? []) as Array<{ path: string; passage: string }>;
      return {
        text: passagesText(hits),
        citations: hits.flatMap((h) => citation(h.path, h.passage)).slice(0, 10),
      };
    }
    case "web_search": {
      const hits = (o.results ?? []) as Array<{ title: string; url: string; snippet: string }>;
      return {
        text: hits.map((h, i) => `[${i + 1}] ${h.title} (${h.url}): ${clip(h.snippet, 500)}`).join("\n"),
        citations: hits.flatMap((h) => citation(h.url, h.snippet || h.title)).slice(0, 10),
      };
    }
    case "calculator":
      return { text: `${String(o.result ?? "")}${o.truncated === true ? " (truncated)" : ""}`, citations: [] };
    case "file_read":
      return { text: String(o.content ?? ""), citations: citation(String(o.path ?? ""), String(o.content ?? "")) };
    case "generate_image": {
      // a link fits the text; an image sent as base64 does not, so the text says what came instead
      const images = (o.images ?? []) as Array<{ url?: string; mime_type?: string; b64_json?: string }>;
      const lines = images.map((img, i) =>
        img.url
          ? `[${i + 1}] ${img.url}`
          : `[${i + 1}] an image returned as base64 data (${img.mime_type ?? "unknown type"}, ${img.b64_json?.length ?? 0} characters), which this text cannot carry`,
      );
      return {
        text: [`${images.length} image(s) from ${String(o.model ?? "the images endpoint")}:`, ...lines].join("\n"),
        citations: [],
      };
    }
    case "analyze_image":
      return { text: String(o.answer ?? ""), citations: [] };
    default:
      return { text: typeof output === "string" ? output : JSON.stringify(output), citations: [] };
  }
}

/** The executor's attempt records as ToolPerformanceLog lines. */
function records(result: ToolCallResult, tool: string): ToolPerformanceRecord[] {
  return result.records.slice(-BLACKBOARD_LIMITS.maxToolAttempts).map((r) => ({
    tool: ToolName.safeParse(r.tool).success ? r.tool : tool,
    args_digest: r.argsDigest,
    latency_ms: r.latencyMs,
    outcome: r.outcome,
    attempt: r.attempt,
    ...(r.flags.length > 0 ? { flags: r.flags } : {}),
  }));
}

/**
 * Runs one non-summarize plan step with one strategy under the safe executor: the step's own tool
 * (`tool`), corpus_search over the strategy query and an answer the model writes from its
 * passages (`rag`, see rag.ts), or web_search (`web`). A tool's failure is an `ok: false`
 * StepResult with every attempt recorded, never a task failure. The latency is the strategy's
 * whole: the search and, for `rag`, the answer.
 */
export async function executeStep(
  req: ExecuteRequest,
  call: (c: ExecutorCall) => Promise<ToolCallResult>,
  ctx: Ctx,
): Promise<StepResult> {
  const query = req.query ?? req.question;
  const [tool, args] =
    req.strategy === "tool"
      ? [req.step.tool, argsObject(req.step.args)]
      : req.strategy === "rag"
        ? [STRATEGY_TOOL.rag, { query: clip(query, 500), limit: 5 }]
        : [STRATEGY_TOOL.web, { query: clip(query, WEB_QUERY_MAX), count: 5 }];
  // The step's own tool is the planner's choice: only among the tools it was shown, never a banned
  // one. The rag and web tools are the workflow's choice, so only a ban stops them.
  const policy =
    req.strategy === "tool" ? { listed: req.policy.listed, banned: req.policy.banned } : { banned: req.policy.banned };
  const started = performance.now();
  const result = await call({
    tool,
    args,
    sessionId: ctx.sessionId,
    taskId: ctx.taskId,
    signal: ctx.signal,
    limits: req.limits,
    policy,
    ...(ctx.allowance === undefined ? {} : { allowance: ctx.allowance }),
  });
  const recs = records(result, tool);
  const attempts = recs.filter((r) => r.attempt > 0).length;
  const since = () => Math.round((performance.now() - started) * 1000) / 1000;
  if (!result.ok) {
    return {
      strategy: req.strategy,
      tool,
      ok: false,
      output: null,
      error: { code: result.error.code, message: clip(result.error.message, 500), retryable: result.error.retryable },
      latency_ms: since(),
      attempts,
      records: recs,
      citations: [],
    };
  }
  const rendered =
    req.strategy === "rag"
      ? await ragOutput(req, result.output as RagSearch, { complete: ctx.complete ?? noModel, signal: ctx.signal })
      : renderOutput(tool, result.output);
  return {
    strategy: req.strategy,
    tool,
    ok: true,
    output: rendered.text.slice(0, 4000),
    error: null,
    latency_ms: since(),
    attempts,
    records: recs,
    citations: rendered.citations,
  };
}

/** A JSON schema small enough for the planner (≤ 3000 characters): descriptions dropped first, then all but the type. */
function fitSchema(schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { $schema: _drop, ...rest } = schema;
  if (JSON.stringify(rest).length <= 3000) return rest;
  const bare = JSON.parse(JSON.stringify(rest, (k, v: unknown) => (k === "description" ? undefined : v))) as Record<
    string,
    unknown
  >;
  return JSON.stringify(bare).length <= 3000 ? bare : { type: "object" };
}

/** executor.list_tools: the registry tools the executor role may call, as the planner sees them. */
export function listTools(registry: ToolRegistry, max: number): ToolInfo[] {
  return registry
    .list({ role: "executor" })
    .filter((t) => ToolName.safeParse(t.name).success)
    .slice(0, max)
    .map((t) => ({ name: t.name, description: clip(t.description, 500), input_schema: fitSchema(t.inputSchema) }));
}
