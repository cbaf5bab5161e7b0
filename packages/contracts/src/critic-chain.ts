import { z } from "zod";
import { LIMITS } from "./limits.js";
import { ToolName } from "./blackboard.js";
import { MAX_OBSERVATIONS, MAX_OFFERED_TOOLS, OfferedTool, ToolObservation } from "./supervisor-ops.js";
import { PendingToolCall } from "./supervisor-state.js";

/**
 * critic-chain's agent turns with tools (the researcher works a research step with tools, the
 * expert computes with them; docs/workflows/critic-chain.md), the loop states the session keeps
 * (`researcher_states`, `expert_state`), its `messages`, and what a retry hands the agent.
 */

const Text = z.string().max(LIMITS.maxTextChars);
const Steps = z.array(z.string().min(1).max(2000)).max(LIMITS.maxListItems);

/** Tool rounds one researcher or expert turn may make: the default, and the most a deployment may set. */
export const CRITIC_CHAIN_TOOL_ROUNDS = { default: 5, max: 10 } as const;
/** The `messages` kept (the latest), and each one's content bound (characters). */
export const CHAIN_MESSAGES = { max: 60, contentChars: 1000 } as const;

/** What a deployment gives critic-chain's researcher and expert: the tools it serves them and the rounds per turn (the coordinator's config). */
export const CriticChainSettings = z.object({
  tools: z.array(ToolName).max(MAX_OFFERED_TOOLS),
  max_tool_rounds: z.number().int().min(0).max(CRITIC_CHAIN_TOOL_ROUNDS.max),
});
export type CriticChainSettings = z.infer<typeof CriticChainSettings>;

/**
 * One of the messages: the user's question to the orchestrator, an orchestrator's
 * instruction to an agent, an agent's completion message back (its content cut to
 * `CHAIN_MESSAGES.contentChars`).
 */
export const ChainMessage = z.object({
  sender: z.string().min(1).max(40),
  receiver: z.string().min(1).max(40),
  type: z.enum(["question", "instruction", "response"]),
  content: z.string().max(CHAIN_MESSAGES.contentChars),
  step_id: z.number().int().nullable(),
});
export type ChainMessage = z.infer<typeof ChainMessage>;

/** What a researcher or expert subgraph keeps between its turns (ResearcherState / ExpertState). */
const AgentLoop = {
  /** Model turns so far (each tool round adds one; a retry after a critic's reject starts a new one). */
  turns: z.number().int().nonnegative(),
  /** Tool rounds used in the current turn (at most the session's `max_tool_rounds`). */
  tool_rounds: z.number().int().nonnegative(),
  /** Tool calls refused in the current turn (not offered, or no rounds left). */
  refusals: z.number().int().nonnegative(),
  /** Its tool calls and what came of them, oldest first (the latest kept); kept across a retry, so the agent sees what it found before. */
  observations: z.array(ToolObservation).max(MAX_OBSERVATIONS),
  /** The tool call in flight (an executor.call task), null between calls. */
  pending_call: PendingToolCall.nullable(),
};

/** One research step's subgraph state; its result is `research_results[step_id]`. */
export const ResearcherState = z.object({
  step_id: z.number().int().nonnegative(),
  research_step: z.string().max(2000),
  ...AgentLoop,
});
export type ResearcherState = z.infer<typeof ResearcherState>;

/** The expert's subgraph state; its answer is `expert_answer` and `expert_reasoning`. */
export const ExpertState = z.object(AgentLoop);
export type ExpertState = z.infer<typeof ExpertState>;

/** True when `json` is the text of a JSON object. */
function isJsonObject(json: string): boolean {
  try {
    const v: unknown = JSON.parse(json);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * The tool part of an agent turn, written flat (strict structured output takes only objects):
 * `action` "tool" names the tool and its arguments as JSON text; "answer" leaves both empty.
 * Every field has a default, so a reply that only answers (`{"result": …}`) is read as an answer.
 */
const TurnAction = {
  action: z.enum(["answer", "tool"]).default("answer"),
  tool: z.string().max(80).default(""),
  arguments_json: z.string().max(30_000).default(""),
};

function checkTool(d: { action: "answer" | "tool"; tool: string; arguments_json: string }, ctx: z.RefinementCtx): void {
  if (d.action !== "tool") return;
  if (d.tool.trim() === "")
    ctx.addIssue({ code: "custom", path: ["tool"], message: "action tool needs the tool's name" });
  if (!isJsonObject(d.arguments_json))
    ctx.addIssue({ code: "custom", path: ["arguments_json"], message: "arguments_json must be a JSON object" });
}

/** researcher.research's reply: the step's result, or one tool call. */
export const ResearchTurn = z.object({ ...TurnAction, result: Text.default("") }).superRefine(checkTool);
export type ResearchTurn = z.infer<typeof ResearchTurn>;

/** expert.answer's reply: the answer and its reasoning, or one tool call. */
export const ExpertTurn = z
  .object({ ...TurnAction, expert_answer: Text.default(""), expert_reasoning: Text.default("") })
  .superRefine(checkTool);
export type ExpertTurn = z.infer<typeof ExpertTurn>;

/** What a researcher or expert turn is given besides its task: the tools it may call, what they returned so far, and the rounds left (at 0 it must answer). */
export const ToolTurn = {
  tools: z.array(OfferedTool).max(MAX_OFFERED_TOOLS).default([]),
  observations: z.array(ToolObservation).max(MAX_OBSERVATIONS).default([]),
  tool_rounds_left: z.number().int().min(0).max(CRITIC_CHAIN_TOOL_ROUNDS.max).default(0),
};

/** The plan a critic rejected, handed back to the planner with the feedback. */
export const RejectedPlan = z.object({ research_steps: Steps, expert_steps: Steps });
export type RejectedPlan = z.infer<typeof RejectedPlan>;
/** The answer a critic rejected, handed back to the expert with the feedback. */
export const RejectedAnswer = z.object({ expert_answer: Text, expert_reasoning: Text });
export type RejectedAnswer = z.infer<typeof RejectedAnswer>;
