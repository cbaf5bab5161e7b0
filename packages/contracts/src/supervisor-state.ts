import { z } from "zod";
import { LIMITS } from "./limits.js";
import { ToolName } from "./blackboard.js";
import { HaloCitation } from "./halo.js";
import { Conversation } from "./messages.js";
import { ResearchScenario, SupervisorAgent } from "./workflows.js";
import {
  CodeLanguage,
  HandoffInfo,
  MAX_HANDOFFS,
  RESEARCH_DEPTHS,
  ResearchDepth,
  SharedAgentMemory,
  SUPERVISOR_LIMITS,
  VegaLiteSpec,
} from "./supervisor.js";
import {
  CodeAttempt,
  DataInput,
  MAX_OBSERVATIONS,
  MAX_OFFERED_TOOLS,
  ToolObservation,
  WritingBrief,
} from "./supervisor-ops.js";

/**
 * The agents' graph nodes: the one a supervisor session is running, or `done`.
 * `router` picks the agent; each agent's own nodes follow (chat: agent ⇄ tools; research:
 * search_agent ⇄ search_tools → analyze → synthesize → finalize; code: generate ⇄ execute;
 * writing: analyze → outline → write → finalize; data: plan → generate ⇄ execute → summarize).
 */
export const SupervisorNode = z.enum([
  "router",
  "agent",
  "tools",
  "search_agent",
  "search_tools",
  "analyze",
  "synthesize",
  "finalize",
  "generate",
  "execute",
  "outline",
  "write",
  "plan",
  "summarize",
  "done",
]);
export type SupervisorNode = z.infer<typeof SupervisorNode>;

const Text = z.string().max(LIMITS.maxTextChars);

/** The tool call in flight: what the agent asked for, under the id its `tool_call` and `tool_result` events share. */
export const PendingToolCall = z.object({
  id: z.string().min(1).max(64),
  tool: ToolName,
  arguments: z.record(z.string(), z.unknown()),
});
export type PendingToolCall = z.infer<typeof PendingToolCall>;

/** Code the code or data agent generated, waiting for (or just back from) its sandbox run. */
export const PendingCode = z.object({
  language: CodeLanguage,
  code: z.string().min(1).max(LIMITS.maxCodeChars),
  explanation: z.string().max(2000),
  /** The data agent's chart (a Vega-Lite spec without data); null for the code agent or no chart. */
  chart: VegaLiteSpec.nullable(),
});
export type PendingCode = z.infer<typeof PendingCode>;

/**
 * supervisor session data, the SupervisorState field names where it has them:
 * `query`, `mode`, `selected_agent`, `routing_reason`, `routing_confidence`, `is_low_confidence`,
 * `active_agent`, `delegated_task`, `handoff_context`, `handoff_count`, `handoff_history`,
 * `pending_handoff`, `shared_memory`, `tool_iterations`, `response`, `error`. The per-agent
 * scratch (observations to data_attempts) belongs to the active agent and is reset at a handoff.
 */
export const SupervisorData = z.object({
  workflow: z.literal("supervisor"),
  query: z.string().max(LIMITS.queryMaxChars),
  /** The client's explicit agent (the router is not asked); null = routed. */
  mode: SupervisorAgent.nullable(),
  depth: ResearchDepth,
  scenario: ResearchScenario,
  /** The conversation's earlier turns. */
  messages: Conversation,
  /** The tools this deployment serves (copied from the coordinator's config at creation). */
  tools_available: z.array(ToolName).max(MAX_OFFERED_TOOLS),
  node: SupervisorNode,
  selected_agent: SupervisorAgent.nullable(),
  routing_reason: z.string().max(SUPERVISOR_LIMITS.maxRoutingReasonChars).nullable(),
  routing_confidence: z.number().min(0).max(1).nullable(),
  is_low_confidence: z.boolean(),
  active_agent: SupervisorAgent.nullable(),
  /** The task the last handoff delegated (null: the query itself). */
  delegated_task: z.string().max(SUPERVISOR_LIMITS.maxHandoffTaskChars).nullable(),
  handoff_context: z.string().max(SUPERVISOR_LIMITS.maxHandoffContextChars).nullable(),
  handoff_count: z.number().int().min(0).max(MAX_HANDOFFS),
  handoff_history: z.array(HandoffInfo).max(MAX_HANDOFFS),
  /** Null except within the transition that makes a handoff (never stored otherwise). */
  pending_handoff: HandoffInfo.nullable(),
  shared_memory: SharedAgentMemory,
  /** Tool rounds the current agent loop has run (chat: agent ⇄ tools; research: search rounds). */
  tool_iterations: z.number().int().nonnegative(),
  /** Times the current node was asked again after a refused tool call (bounded, so no loop is endless). */
  refusals: z.number().int().nonnegative(),
  observations: z.array(ToolObservation).max(MAX_OBSERVATIONS),
  pending_call: PendingToolCall.nullable(),
  /** research */
  sources: z.array(HaloCitation).max(RESEARCH_DEPTHS.deep.sourcesKept),
  search_summary: Text.nullable(),
  analysis: Text.nullable(),
  synthesis: Text.nullable(),
  /** code and data: the code being run and earlier rounds, oldest first. */
  code: PendingCode.nullable(),
  code_attempts: z.array(CodeAttempt).max(SUPERVISOR_LIMITS.codeMaxIterations),
  /** writing */
  writing: WritingBrief.nullable(),
  outline: Text.nullable(),
  draft: Text.nullable(),
  /** data: the data agent's data; an attachment's data is held here from the start for the whole session. */
  data_input: DataInput.nullable(),
  analysis_plan: z.string().max(4000).nullable(),
  chart_planned: z.boolean(),
  charted: z.boolean(),
  /** Lines of the reasoning trace the workflow noted (a chart dropped, a refusal), oldest first. */
  notes: z.array(z.string().max(500)).max(40),
  /** Tool calls minted so far: the next call's id is `call-<tool_calls + 1>`. */
  tool_calls: z.number().int().nonnegative(),
  response: z
    .string()
    .max(LIMITS.maxTextChars * 2)
    .nullable(),
  error: z.string().max(4000).nullable(),
  error_component: z.string().max(100).nullable(),
});
export type SupervisorData = z.infer<typeof SupervisorData>;

/** What a deployment tells the supervisor: the tools its agents may call (the coordinator's config). */
export const SupervisorSettings = z.object({ tools: z.array(ToolName).min(1).max(MAX_OFFERED_TOOLS) });
export type SupervisorSettings = z.infer<typeof SupervisorSettings>;
