import { z } from "zod";
import { SessionId, ThreadId } from "./ids.js";
import { Owner } from "./subjects.js";
import { TaskId } from "./ids.js";
import { WireError } from "./errors.js";
import { Budgets, type ThreadCarry } from "./messages.js";
import { LIMITS } from "./limits.js";
import { SessionTrace } from "./headers.js";
import { BlackboardData } from "./blackboard-state.js";
import { HaloData } from "./halo.js";
import { SupervisorData } from "./supervisor-state.js";
import { ToolName } from "./blackboard.js";
import { MAX_OFFERED_TOOLS } from "./supervisor-ops.js";
import {
  CHAIN_MESSAGES,
  CRITIC_CHAIN_TOOL_ROUNDS,
  ChainMessage,
  ExpertState,
  ResearcherState,
} from "./critic-chain.js";
import { ClarifyData } from "./clarify.js";

/** Where a session is in its life. Everything but `running` and `awaiting_user` is terminal. */
export const SessionStatus = z.enum([
  "running",
  "awaiting_user",
  "completed",
  "failed",
  "cancelled",
  "budget_exceeded",
]);
export type SessionStatus = z.infer<typeof SessionStatus>;
export const TERMINAL_STATUSES: readonly SessionStatus[] = ["completed", "failed", "cancelled", "budget_exceeded"];
export const isTerminal = (s: SessionStatus) => TERMINAL_STATUSES.includes(s);

/** A task the session is waiting for. Only a result for one of these is applied. */
export const AwaitedTask = z.object({
  task_id: TaskId,
  role: z.string().max(40),
  op: z.string().max(40),
  attempt: z.number().int().nonnegative(),
  /** The workflow's own label for the task (e.g. which strategy of a fan-out), handed back with its result. */
  tag: z.string().max(64).optional(),
  dispatched_at: z.number().int().nonnegative(),
  deadline_at: z.number().int().nonnegative().nullable(),
});
export type AwaitedTask = z.infer<typeof AwaitedTask>;

/** Spend so far; every attempt counts. */
export const Spend = z.object({
  steps: z.number().int().nonnegative(),
  model_calls: z.number().int().nonnegative(),
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  cost_usd: z.number().nonnegative(),
  /** Executor tasks dispatched (tool calls and code runs), each attempt counted; absent (a session stored before it was counted) = 0. */
  tool_calls: z.number().int().nonnegative().optional(),
});
export type Spend = z.infer<typeof Spend>;

/** Runtime fields of a session, the same for every workflow. */
export const SessionMeta = z.object({
  session_id: SessionId,
  version: z.number().int().nonnegative(),
  workflow: z.string().max(40),
  workflow_version: z.number().int().positive(),
  status: SessionStatus,
  awaiting: z.array(AwaitedTask).max(64),
  usage: Spend,
  budgets: Budgets,
  /**
   * Tool calls the session may make in all, across every executor replica; each executor task
   * carries what is left. Absent (a session stored before it was counted) = the default, 100.
   */
  max_tool_calls: z.number().int().nonnegative().optional(),
  created_at: z.number().int().nonnegative(),
  updated_at: z.number().int().nonnegative(),
  deadline_at: z.number().int().nonnegative().nullable(),
  error: WireError.nullable(),
  /**
   * Time spent waiting for a person (`awaiting_user`), excluded from the wall clock: the
   * wall-clock budget counts `now - created_at - paused_ms`, and the deadline moves by as much.
   */
  paused_ms: z.number().int().nonnegative().default(0),
  /**
   * While waiting for a person: since when, and how much of the session deadline was left. The
   * deadline (`deadline_at`) is null meanwhile and re-armed that far after the reply.
   * `expires_at`: when the session fails as expired if nobody answers (null: never; state schema 1).
   */
  pause: z
    .object({
      since: z.number().int().nonnegative(),
      deadline_left_ms: z.number().int().nonnegative().nullable(),
      expires_at: z.number().int().nonnegative().nullable().default(null),
    })
    .nullable()
    .default(null),
  /** The API key name that created the session (null: a client without one, e.g. the CLI); state schema 3. */
  owner: Owner.nullable().default(null),
  /** The thread the session belongs to (null: none); state schema 3. */
  thread_id: ThreadId.nullable().default(null),
  /** The session's OpenTelemetry trace (null: a session created before it was stored); state schema 4. */
  trace: SessionTrace.nullable().default(null),
});
export type SessionMeta = z.infer<typeof SessionMeta>;

const Text = z.string().max(LIMITS.maxTextChars);

/** critic-chain's steps, as its state names them (docs/workflows/critic-chain.md). */
export const CriticChainStep = z.enum([
  "input",
  "planner",
  "critic_planner",
  "researcher",
  "critic_researcher",
  "expert",
  "critic_expert",
  "finalizer",
]);
export type CriticChainStep = z.infer<typeof CriticChainStep>;
const Decision = z.enum(["approve", "reject"]).nullable();

/** critic-chain session data, with the field names verbatim. */
export const CriticChainData = z.object({
  workflow: z.literal("critic-chain"),
  question: Text,
  current_step: CriticChainStep,
  next_step: CriticChainStep,
  research_steps: z.array(z.string()).max(LIMITS.maxListItems),
  expert_steps: z.array(z.string()).max(LIMITS.maxListItems),
  current_research_index: z.number().int().min(-1),
  research_results: z.array(Text).max(LIMITS.maxListItems),
  expert_answer: Text,
  expert_reasoning: Text,
  critic_planner_decision: Decision,
  critic_planner_feedback: z.string().nullable(),
  critic_researcher_decision: Decision,
  critic_researcher_feedback: z.string().nullable(),
  critic_expert_decision: Decision,
  critic_expert_feedback: z.string().nullable(),
  retry_count: z.number().int().nonnegative(),
  retry_limit: z.number().int().positive(),
  final_answer: Text.nullable(),
  final_reasoning_trace: Text.nullable(),
  error: z.string().nullable(),
  error_component: z.string().nullable(),
  // Added with critic-chain's tool loops, before layout 4: every layout-4 state has them. A state of
  // the current layout is not parsed when read (session-store), so a new field needs a layout bump
  // and a migration, not just a default (the layout test in session-store fails until then).
  /** The messages: the question, each instruction and each agent's completion message, the latest kept. */
  messages: z.array(ChainMessage).max(CHAIN_MESSAGES.max).default([]),
  /** The per-step researcher subgraph states, keyed by the research step's index. */
  researcher_states: z.record(z.string().regex(/^\d{1,3}$/), ResearcherState).default({}),
  /** The expert subgraph state; null before the expert's first turn. */
  expert_state: ExpertState.nullable().default(null),
  /** The tools this deployment serves the researcher and the expert (copied from the coordinator's config at creation). */
  tools_available: z.array(ToolName).max(MAX_OFFERED_TOOLS).default([]),
  /** Tool rounds per researcher or expert turn. */
  max_tool_rounds: z.number().int().min(0).max(CRITIC_CHAIN_TOOL_ROUNDS.max).default(CRITIC_CHAIN_TOOL_ROUNDS.default),
  /** Tool calls minted so far: the next call's id is `call-<tool_calls + 1>`. */
  tool_calls: z.number().int().nonnegative().default(0),
});
export type CriticChainData = z.infer<typeof CriticChainData>;

/** Workflow data, a union keyed by `workflow`. */
export const SessionData = z.discriminatedUnion("workflow", [
  CriticChainData,
  BlackboardData,
  HaloData,
  SupervisorData,
  ClarifyData,
]);
export type SessionData = z.infer<typeof SessionData>;

/** The whole session as stored on the blackboard. */
export const SessionState = z.object({ meta: SessionMeta, data: SessionData });
export type SessionState = z.infer<typeof SessionState>;

/**
 * What a session contributes to its thread's conversation: the question it was asked, once it
 * has one its final answer, and while it waits for a person the question it put to them. Every
 * workflow's data names them; a new workflow adds its case.
 */
export function conversationTurn(state: SessionState): {
  question: string;
  answer: string | null;
  asked: string | null;
} {
  const d = state.data;
  const waiting = state.meta.status === "awaiting_user";
  switch (d.workflow) {
    case "critic-chain":
      return { question: d.question, answer: d.final_answer, asked: null };
    case "blackboard":
      return { question: d.question, answer: d.final_answer, asked: waiting ? d.question_for_human : null };
    case "halo":
      return { question: d.question, answer: d.response_str, asked: null };
    case "supervisor":
      return { question: d.query, answer: d.response, asked: null };
    case "clarify":
      return {
        question: d.question,
        answer: d.final_answer,
        asked: waiting ? (d.clarification?.question ?? null) : null,
      };
  }
}

/**
 * What a session hands on to the next session of its thread besides its turn: clarify's count
 * (it lives as long as the thread). A workflow without such state hands on nothing.
 */
export function threadCarry(state: SessionState): ThreadCarry {
  const d = state.data;
  return { clarification_count: d.workflow === "clarify" ? d.clarification_count : null };
}

/**
 * The long-term references a session keeps for its thread: the blackboard memory's (the thread's
 * own it started with, then what it added; docs/workflows/blackboard.md). Others keep none.
 */
export function longTermRefsOf(state: SessionState): string[] {
  const d = state.data;
  return d.workflow === "blackboard" ? [...d.memory.long_term_refs] : [];
}

/** A thread: sessions in order, owned by one API key. Written only by coordinators, at submit. */
export const Thread = z.object({
  thread_id: ThreadId,
  owner: Owner.nullable(),
  created_at: z.number().int().nonnegative(),
  updated_at: z.number().int().nonnegative(),
  /** Its sessions, oldest first (the latest `LIMITS.maxThreadSessions`). */
  sessions: z.array(SessionId).max(LIMITS.maxThreadSessions),
});
export type Thread = z.infer<typeof Thread>;

/**
 * One line of a session's transition log: which input applied when, and what it did. `input` is
 * the input itself when its JSON is under `LIMITS.maxLogInputChars`, else a summary of it
 * (`truncated: true`). The log keeps its first line and the latest (see LIMITS).
 */
export const TransitionLogLine = z.object({
  version: z.number().int().positive(),
  input_id: z.string(),
  input: z.unknown(),
  now: z.number().int().nonnegative(),
  commands: z.array(z.string()),
  status: SessionStatus,
});
export type TransitionLogLine = z.infer<typeof TransitionLogLine>;
