import { defineAgent, defineRoleSetup, type AgentSetup } from "@agentmesh/agent-kit";
import { SUMMARIZE_TOOL } from "@agentmesh/contracts";
import type { Logger } from "@agentmesh/service-kit";
import { callTool } from "./call.js";
import { loadExecutorConfig, type ExecutorConfig } from "./config.js";
import { summarizeOffline } from "./draft.js";
import { executeStep, listTools } from "./execute.js";
import { summarizeStep } from "./summarize.js";
import { createExecutorTools, type ExecutorTools } from "./tools.js";

/** The executor role over its tools: the safe executor as a service. */
export function executorAgent(tools: Pick<ExecutorTools, "registry" | "call">) {
  return defineAgent({
    role: "executor",
    description: "Runs one plan step with one strategy (tool, RAG, web) or one tool call under the safe executor, writes the summary, lists its tools",
    ops: {
      execute: {
        kind: "handler",
        version: "executor.execute/1",
        contract: "executor.execute",
        run: (input, ctx) =>
          input.step.tool === SUMMARIZE_TOOL
            ? summarizeStep(input, ctx)
            : executeStep(input, (c) => tools.call(c), { sessionId: ctx.sessionId, taskId: ctx.taskId, signal: ctx.signal }),
        summarize: (o) => `${o.strategy} ${o.tool}: ${o.ok ? "ok" : `failed (${o.error?.code ?? "error"})`} after ${o.attempts} attempt(s), ${o.citations.length} citation(s)`,
        // the model call of the summarize step, answered offline
        offline: summarizeOffline,
      },
      call: {
        kind: "handler",
        version: "executor.call/1",
        run: (input, ctx) => callTool(input, (c) => tools.call(c), { sessionId: ctx.sessionId, taskId: ctx.taskId, signal: ctx.signal }),
        summarize: (o) => `${o.tool}: ${o.ok ? "ok" : `failed (${o.error?.code ?? "error"})`} after ${o.attempts} attempt(s)${o.code ? `, exit code ${o.code.exit_code ?? "none"}` : ""}, ${o.citations.length} citation(s)`,
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
