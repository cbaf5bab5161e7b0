import { defineAgent, defineRoleSetup, type AgentSetup, type HandlerContext } from "@agentmesh/agent-kit";
import { CODE_TOOL, SUMMARIZE_TOOL } from "@agentmesh/contracts";
import type { ToolCallResult } from "@agentmesh/tools";
import type { Logger } from "@agentmesh/service-kit";
import { callTool } from "./call.js";
import { loadExecutorConfig, type ExecutorConfig } from "./config.js";
import { summarizeOffline } from "./draft.js";
import { executeStep, listTools } from "./execute.js";
import { summarizeStep } from "./summarize.js";
import { needsModel } from "@agentmesh/offline-kit";
import { createExecutorTools, type ExecutorCall, type ExecutorTools } from "./tools.js";

const SANDBOXED: ReadonlySet<string> = new Set(Object.values(CODE_TOOL));
const ragNeedsModel = needsModel("RAG strategy", "write an answer from the passages it retrieved");

/**
 * A tool call in a `tool_call` span (a code run also in a `sandbox_run` span inside it), each
 * with its outcome; with tracing off the call runs as is.
 */
export function tracedCall(
  call: (c: ExecutorCall) => Promise<ToolCallResult>,
  ctx: Pick<HandlerContext, "span" | "tracing">,
) {
  if (!ctx.tracing) return call;
  const outcome = (r: ToolCallResult) => ({
    "agentmesh.ok": r.ok,
    "agentmesh.error_code": r.ok ? undefined : r.error.code,
    "agentmesh.attempts": r.records.filter((x) => x.attempt > 0).length,
  });
  return (c: ExecutorCall) =>
    ctx.span(
      "tool_call",
      { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": c.tool, "agentmesh.tool": c.tool },
      async (span) => {
        const r = SANDBOXED.has(c.tool)
          ? await ctx.span(
              "sandbox_run",
              { "agentmesh.tool": c.tool, "agentmesh.sandbox.timeout_ms": c.limits.timeout_ms },
              async (run) => {
                const inner = await call(c);
                run.setAttributes(outcome(inner));
                return inner;
              },
              span,
            )
          : await call(c);
        span.setAttributes(outcome(r));
        return r;
      },
    );
}

/** What a tool call needs of its task: ids, signal, and the tool calls its session may still make. */
const taskCtx = (ctx: HandlerContext) => ({
  sessionId: ctx.sessionId,
  taskId: ctx.taskId,
  signal: ctx.signal,
  ...(ctx.allowance === undefined ? {} : { allowance: ctx.allowance.tool_calls }),
});

/** The executor role over its tools: the safe executor as a service. */
export function executorAgent(tools: Pick<ExecutorTools, "registry" | "call">) {
  return defineAgent({
    role: "executor",
    description:
      "Runs one plan step with one strategy (tool, RAG, web) or one tool call under the safe executor, writes the summary, lists its tools",
    ops: {
      execute: {
        kind: "handler",
        version: "executor.execute/1",
        contract: "executor.execute",
        run: (input, ctx) =>
          input.step.tool === SUMMARIZE_TOOL
            ? summarizeStep(input, ctx)
            : executeStep(
                input,
                tracedCall((c) => tools.call(c), ctx),
                { ...taskCtx(ctx), complete: ctx.complete },
              ),
        summarize: (o) =>
          `${o.strategy} ${o.tool}: ${o.ok ? "ok" : `failed (${o.error?.code ?? "error"})`} after ${o.attempts} attempt(s), ${o.citations.length} citation(s)`,
        // the model call of the summarize step, answered offline; the RAG step's needs a model,
        // so offline it keeps the passages as found (rag.ts)
        offline: (input, ctx) =>
          input.step.tool === SUMMARIZE_TOOL ? summarizeOffline(input) : ragNeedsModel(input, ctx),
      },
      call: {
        kind: "handler",
        version: "executor.call/1",
        run: (input, ctx) =>
          callTool(
            input,
            tracedCall((c) => tools.call(c), ctx),
            taskCtx(ctx),
          ),
        summarize: (o) =>
          `${o.tool}: ${o.ok ? "ok" : `failed (${o.error?.code ?? "error"})`} after ${o.attempts} attempt(s)${o.code ? `, exit code ${o.code.exit_code ?? "none"}` : ""}, ${o.citations.length} citation(s)`,
      },
      list_tools: {
        kind: "handler",
        version: "executor.list_tools/1",
        run: (input) => Promise.resolve({ tools: listTools(tools.registry, input.max_tools) }),
        summarize: (o) => `${o.tools.length} tools: ${o.tools.map((t) => t.name).join(", ")}`,
      },
    },
  });
}

/** Builds the executor from its configuration: the built-in tools, the MCP servers' tools (plus test tools when asked) behind the safe executor. */
export async function createExecutor(cfg: ExecutorConfig, log: Logger): Promise<AgentSetup> {
  const tools = await createExecutorTools(cfg, log);
  log.info({ tools: tools.registry.list({ role: "executor" }).map((t) => t.name) }, "executor tools");
  return { agents: [executorAgent(tools)], close: () => tools.close() };
}

/** The executor role folder's entry: its tools are built from the environment at start. */
export default defineRoleSetup("executor", (env, log) => createExecutor(loadExecutorConfig(env), log));
