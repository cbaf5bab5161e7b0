import {
  BLACKBOARD_LIMITS,
  type EffectiveLimits,
  type ExecutionMode,
  type ExecutionStrategy,
  type RetrievalSource,
  type StrategyProfile,
} from "@agentmesh/contracts";

/** One row of the strategy-profile table, before the component ceilings apply. */
export interface ProfileLimits {
  /** Most steps a plan may have (a rewritten plan too). */
  readonly max_steps: number;
  /** Re-runs of one plan step after a failure or an unacceptable result. */
  readonly max_retries: number;
  /** Plan rewrites per session. */
  readonly max_rewrites: number;
  readonly execution: ExecutionMode;
}

/**
 * The strategy profiles, one table: CONSERVATIVE runs the step's tool only; EXPLORATORY
 * runs tool, RAG and web at once and keeps the best; FALLBACK tries them one after another.
 */
export const STRATEGY_PROFILES = {
  CONSERVATIVE: { max_steps: 5, max_retries: 2, max_rewrites: 1, execution: "tool_only" },
  EXPLORATORY: { max_steps: 15, max_retries: 3, max_rewrites: 3, execution: "parallel" },
  FALLBACK: { max_steps: 10, max_retries: 4, max_rewrites: 2, execution: "sequential" },
} as const satisfies Record<StrategyProfile, ProfileLimits>;

/** The components' own ceilings: the decision agent plans at most 20 steps and rewrites at most 5 times. */
export const COMPONENT_CEILINGS = {
  max_steps: BLACKBOARD_LIMITS.maxPlanSteps,
  max_rewrites: BLACKBOARD_LIMITS.maxPlanRewrites,
} as const;

/** Strategies in priority order: when several succeed, the first of these wins. */
export const STRATEGY_PRIORITY: readonly ExecutionStrategy[] = ["tool", "rag", "web"];

/** Which strategies an execution mode runs, in the order it may run them. */
export const MODE_STRATEGIES: Readonly<Record<ExecutionMode, readonly ExecutionStrategy[]>> = {
  tool_only: ["tool"],
  parallel: STRATEGY_PRIORITY,
  sequential: STRATEGY_PRIORITY,
};

/**
 * A profile's effective limits: the smaller of the profile's and the component ceiling (steps
 * ≤ 20, rewrites ≤ 5). One tool call always gets at most 3 attempts, inside the executor.
 */
export function effectiveLimits(profile: StrategyProfile | ProfileLimits): EffectiveLimits {
  const row: ProfileLimits = typeof profile === "string" ? STRATEGY_PROFILES[profile] : profile;
  return {
    max_steps: Math.max(1, Math.min(row.max_steps, COMPONENT_CEILINGS.max_steps)),
    max_retries: Math.max(0, row.max_retries),
    max_rewrites: Math.max(0, Math.min(row.max_rewrites, COMPONENT_CEILINGS.max_rewrites)),
    execution: row.execution,
    tool_attempts: BLACKBOARD_LIMITS.maxToolAttempts,
  };
}

/**
 * Where the retriever may look. Conservative sessions stay local (memory and corpus); the other
 * profiles may also search the web, as their step execution does.
 */
export function retrievalSources(profile: StrategyProfile): RetrievalSource[] {
  return profile === "CONSERVATIVE" ? ["memory", "corpus"] : ["memory", "corpus", "web"];
}
