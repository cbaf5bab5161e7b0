import { z } from "zod";
import { LIMITS } from "./limits.js";
import {
  AcceptedResult,
  BLACKBOARD_LIMITS,
  BlackboardQuery,
  Citation,
  CriticReport,
  ExecutionStrategy,
  MemoryState,
  PerceptionSnapshot,
  PlanStep,
  RetrievalBundle,
  RetrievalSource,
  RetrieverQuery,
  StepResult,
  StrategyProfile,
  ToolInfo,
  ToolPerformanceRecord,
} from "./blackboard.js";

const Text = z.string().max(LIMITS.maxTextChars);
const Index = z
  .number()
  .int()
  .min(0)
  .max(BLACKBOARD_LIMITS.maxPlanSteps - 1);
const Version = z.number().int().min(1);
const Count = z.number().int().nonnegative();

/** How each plan step's strategies run: the tool alone, all three at once, or one after another. */
export const ExecutionMode = z.enum(["tool_only", "parallel", "sequential"]);
export type ExecutionMode = z.infer<typeof ExecutionMode>;

/** A profile's limits after the component ceilings (steps ≤ 20, rewrites ≤ 5) are applied. */
export const EffectiveLimits = z.object({
  max_steps: z.number().int().min(1).max(BLACKBOARD_LIMITS.maxPlanSteps),
  /** Re-runs of one plan step. */
  max_retries: Count,
  max_rewrites: z.number().int().min(0).max(BLACKBOARD_LIMITS.maxPlanRewrites),
  execution: ExecutionMode,
  /** Attempts of one tool call, in all (inside the executor). */
  tool_attempts: z.number().int().min(1).max(BLACKBOARD_LIMITS.maxToolAttempts),
});
export type EffectiveLimits = z.infer<typeof EffectiveLimits>;

/** Which task the session is waiting for. */
export const BlackboardPhase = z.enum([
  "intake", // perception of the query and the executor's tool list, in parallel
  "remember_query",
  "retrieve",
  "plan",
  "execute",
  "perceive_result",
  "critique",
  "remember_step",
  "awaiting_user",
  "remember_reply",
  "done",
]);
export type BlackboardPhase = z.infer<typeof BlackboardPhase>;

export const PerceptionRecord = z.object({
  source: z.enum(["query", "step_result"]),
  plan_version: Version.nullable(),
  step_index: Index.nullable(),
  snapshot: PerceptionSnapshot,
});
export type PerceptionRecord = z.infer<typeof PerceptionRecord>;

export const RetrievalRecord = z.object({
  query: RetrieverQuery,
  strategies: z.array(RetrievalSource).max(3),
  bundle: RetrievalBundle,
});
export type RetrievalRecord = z.infer<typeof RetrievalRecord>;

/** A plan as recorded on the blackboard: the decision agent's steps plus the coordinator's bookkeeping. */
export const PlanVersion = z.object({
  version: Version,
  steps: z.array(PlanStep).min(1).max(BLACKBOARD_LIMITS.maxPlanSteps),
  rationale: z.string().max(1000),
  current_index: Index,
  status: z.enum(["active", "completed", "superseded", "abandoned"]),
  reason: z.enum(["initial", "rewrite"]),
  rewrite_suggestion: z.string().max(2000).nullable(),
});
export type PlanVersion = z.infer<typeof PlanVersion>;

/** A ToolPerformanceLog line with the plan step and strategy it served. */
export const ToolPerformanceEntry = z.object({
  plan_version: Version,
  step_index: Index,
  strategy: ExecutionStrategy,
  record: ToolPerformanceRecord,
});
export type ToolPerformanceEntry = z.infer<typeof ToolPerformanceEntry>;

export const StepResultRecord = z.object({
  plan_version: Version,
  step_index: Index,
  /** 0 for a step's first run, +1 per profile retry. */
  retry: Count,
  /** The result the join picked (priority tool > rag > web among successes). */
  chosen: z.boolean(),
  result: StepResult,
});
export type StepResultRecord = z.infer<typeof StepResultRecord>;

export const CriticReportRecord = z.object({
  plan_version: Version,
  step_index: Index,
  retry: Count,
  report: CriticReport,
});
export type CriticReportRecord = z.infer<typeof CriticReportRecord>;

/** The strategies of the current plan step: which are still awaited and what came back. */
export const ExecutionRound = z.object({
  mode: ExecutionMode,
  /** Strategies in the order they may run (priority order). */
  order: z.array(ExecutionStrategy).min(1).max(3),
  pending: z.array(ExecutionStrategy).max(3),
  results: z.array(StepResult).max(3),
});
export type ExecutionRound = z.infer<typeof ExecutionRound>;

/** What the coordinator does once the memory has taken in the step's outcome. */
export const NextAction = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("advance") }),
  z.object({ kind: z.literal("retry"), reason: z.string().max(2000) }),
  z.object({ kind: z.literal("rewrite"), suggestion: z.string().max(2000) }),
  z.object({
    kind: z.literal("ask_human"),
    question: z.string().max(500),
    acceptable: z.boolean(),
    rewrite_suggestion: z.string().max(2000).nullable(),
  }),
  z.object({ kind: z.literal("give_up"), reason: z.string().max(2000) }),
]);
export type NextAction = z.infer<typeof NextAction>;

/** blackboard session data: everything the agents produced lives here, each list capped. */
export const BlackboardData = z.object({
  workflow: z.literal("blackboard"),
  question: BlackboardQuery,
  strategy_profile: StrategyProfile,
  limits: EffectiveLimits,
  phase: BlackboardPhase,
  /** The executor's tools, as the decision agent is shown them; null until the executor answered. */
  tools: z.array(ToolInfo).max(BLACKBOARD_LIMITS.maxTools).nullable(),
  perception_snapshots: z.array(PerceptionRecord).max(30),
  retrieval_bundles: z.array(RetrievalRecord).max(3),
  plan_versions: z.array(PlanVersion).max(BLACKBOARD_LIMITS.maxPlanRewrites + 1),
  memory: MemoryState,
  tool_performance_log: z.array(ToolPerformanceEntry).max(200),
  step_results: z.array(StepResultRecord).max(60),
  critic_reports: z.array(CriticReportRecord).max(40),
  round: ExecutionRound.nullable(),
  /** The chosen result of the current step while perception, critic and memory look at it. */
  step_outcome: StepResult.nullable(),
  step_perception: PerceptionSnapshot.nullable(),
  step_retries: Count,
  rewrite_count: Count,
  /** While a rewrite is being planned: the step that went wrong and the advice. */
  rewrite_request: z.object({ failed_step_index: Index, suggestion: z.string().max(2000) }).nullable(),
  next_action: NextAction.nullable(),
  accepted_results: z.array(AcceptedResult).max(BLACKBOARD_LIMITS.maxPlanSteps),
  questions_asked: Count,
  question_for_human: z.string().max(500).nullable(),
  user_replies: z.array(z.string().max(BLACKBOARD_LIMITS.queryMaxChars)).max(3),
  /** One line per thing that happened, for the final reasoning trace. */
  trace: z.array(z.string().max(400)).max(120),
  citations: z.array(Citation).max(10),
  final_answer: Text.nullable(),
  final_reasoning_trace: Text.nullable(),
  error: z.string().max(4000).nullable(),
  error_component: z.string().max(100).nullable(),
});
export type BlackboardData = z.infer<typeof BlackboardData>;
