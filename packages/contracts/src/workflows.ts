import { z } from "zod";

/** Workflows this runtime knows. */
export const WorkflowName = z.enum(["critic-chain", "blackboard", "halo", "supervisor", "clarify"]);
export type WorkflowName = z.infer<typeof WorkflowName>;
export const DEFAULT_WORKFLOW: WorkflowName = "critic-chain";

/** One line per workflow, for clients choosing one (the gateway's workflow list and `/v1/models`). */
export const WORKFLOW_DESCRIPTIONS: Readonly<Record<WorkflowName, string>> = {
  "critic-chain": "planner, researcher and expert, each checked by a critic, then a finalizer",
  blackboard: "perception, memory, retrieval, a tool plan run by a safe executor, and a critic",
  halo: "a capability plan, specialists (graph, corpus, MCP servers, web, chat) in parallel, a judge and one cited answer",
  supervisor:
    "a router picks one of five agents (chat, research, code, writing, data), which may hand the task on to another",
  clarify:
    "an orchestrator asks one clarifying question when the query is vague (at most 2 in a row per thread), then research and a cited answer",
};

/** The agent types (supervisor): what the router picks, handoffs name and a client's `mode` forces. */
export const SupervisorAgent = z.enum(["chat", "research", "code", "writing", "data"]);
export type SupervisorAgent = z.infer<typeof SupervisorAgent>;

/** The research agent's scenarios. */
export const ResearchScenario = z.enum(["academic", "market", "technical", "news"]);
export type ResearchScenario = z.infer<typeof ResearchScenario>;
