import {
  BLACKBOARD_LIMITS,
  DEFAULT_STRATEGY_PROFILE,
  EMPTY_MEMORY,
  type BlackboardData,
  type MemoryState,
  type PerceptionSnapshot,
  type PlanStep,
  type PlanVersion,
  type RetrievalBundle,
  type ChatMessage,
  type SessionOptions,
  type ThreadCarry,
} from "@agentmesh/contracts";
import type { RuntimeDefaults } from "./types.js";
import { effectiveLimits } from "./blackboard-strategy.js";
import { clip } from "./critic-chain-messages.js";

/** Caps of the blackboard's growing lists (the contracts' maxima). */
export const CAPS = {
  perception_snapshots: 30,
  retrieval_bundles: 3,
  tool_performance_log: 200,
  step_results: 60,
  critic_reports: 40,
  accepted_results: BLACKBOARD_LIMITS.maxPlanSteps,
  trace: 120,
  user_replies: 3,
  citations: 10,
  short_term: BLACKBOARD_LIMITS.maxShortTermItems,
} as const;

/**
 * Appends to a capped list. When full, the oldest entries after the first go: the first one
 * (the query's perception, the trace's header) stays useful for the whole session.
 */
export function append<T>(list: readonly T[], items: readonly T[], cap: number): T[] {
  const all = [...list, ...items];
  if (all.length <= cap) return all;
  return [...all.slice(0, 1), ...all.slice(all.length - (cap - 1))];
}

/** Appends one line to the reasoning trace. */
export const traced = (data: BlackboardData, line: string): BlackboardData => ({
  ...data,
  trace: append(data.trace, [clip(line, 400)], CAPS.trace),
});

/**
 * A search query of at most `max` characters derived from longer text (the ≤ 5000 question, a
 * step description): whitespace collapsed, cut at a word boundary when one is near the end.
 */
export function deriveQuery(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return space >= max / 2 ? cut.slice(0, space) : cut;
}

/** The plan being executed (the last version), or null before the first plan. */
export function activePlan(data: BlackboardData): PlanVersion | null {
  const last = data.plan_versions.at(-1);
  return last && last.status === "active" ? last : null;
}

/** The active plan's current step, with its index and whether it is the last (summarize) step. */
export function currentStep(
  data: BlackboardData,
): { plan: PlanVersion; index: number; step: PlanStep; last: boolean } | null {
  const plan = activePlan(data);
  const step = plan?.steps[plan.current_index];
  if (!plan || !step) return null;
  return { plan, index: plan.current_index, step, last: plan.current_index === plan.steps.length - 1 };
}

/** Replaces the active plan (the last version) with `next`. */
export function withPlan(data: BlackboardData, next: PlanVersion): BlackboardData {
  return { ...data, plan_versions: [...data.plan_versions.slice(0, -1), next] };
}

/** The perception of the question itself. */
export const querySnapshot = (data: BlackboardData): PerceptionSnapshot | null =>
  data.perception_snapshots.find((p) => p.source === "query")?.snapshot ?? null;

/** The latest retrieval bundle, or null when retrieval was skipped or failed. */
export const latestRetrieval = (data: BlackboardData): RetrievalBundle | null =>
  data.retrieval_bundles.at(-1)?.bundle ?? null;

/** Adds a person's reply to short-term memory when the memory agent could not. */
export function rememberReply(memory: MemoryState, text: string): MemoryState {
  const item = { kind: "user" as const, content: clip(text, 240), step_index: null };
  return { ...memory, short_term: [...memory.short_term, item].slice(-CAPS.short_term) };
}

/**
 * The initial blackboard: nothing perceived, nothing planned; the memory holds the thread's
 * long-term references (the latest 20) when the session continues a thread that kept some.
 */
export function initialData(
  query: string,
  options: SessionOptions,
  _messages?: readonly ChatMessage[],
  _defaults?: RuntimeDefaults,
  carry?: ThreadCarry,
): BlackboardData {
  const profile = options.strategy_profile ?? DEFAULT_STRATEGY_PROFILE;
  const limits = effectiveLimits(profile);
  return {
    workflow: "blackboard",
    question: query,
    strategy_profile: profile,
    limits,
    phase: "intake",
    tools: null,
    perception_snapshots: [],
    retrieval_bundles: [],
    plan_versions: [],
    memory: {
      ...EMPTY_MEMORY,
      long_term_refs: (carry?.long_term_refs ?? []).slice(-BLACKBOARD_LIMITS.maxLongTermRefs),
    },
    tool_performance_log: [],
    step_results: [],
    critic_reports: [],
    round: null,
    step_outcome: null,
    step_perception: null,
    step_retries: 0,
    rewrite_count: 0,
    rewrite_request: null,
    next_action: null,
    accepted_results: [],
    questions_asked: 0,
    question_for_human: null,
    user_replies: [],
    trace: [
      `Strategy ${profile}: plans of at most ${limits.max_steps} steps, at most ${limits.max_retries} retries per step ` +
        `and ${limits.max_rewrites} plan rewrites per session, execution ${limits.execution.replace("_", " ")}.`,
    ],
    citations: [],
    final_answer: null,
    final_reasoning_trace: null,
    error: null,
    error_component: null,
  };
}
