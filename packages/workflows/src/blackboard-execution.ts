import {
  SUMMARIZE_TOOL,
  type BlackboardData,
  type ExecutionRound,
  type ExecutionStrategy,
  type StepResult,
  type StepResultRecord,
  type ToolPerformanceEntry,
  type EventDraft,
  type WireError,
} from "@agentmesh/contracts";
import { CAPS, append, currentStep, traced } from "./blackboard-data.js";
import { MODE_STRATEGIES, STRATEGY_PRIORITY, retryBackoffMs } from "./blackboard-strategy.js";
import { blackboardFault, STRATEGY_TOOL, executeTask, toolCallId } from "./blackboard-tasks.js";
import { clip } from "./critic-chain-messages.js";
import { toolResult } from "./events.js";
import type { TaskSpec } from "./types.js";

/**
 * The best result among the successes, by priority tool > rag > web, whatever order they
 * arrived in; null when every strategy failed.
 */
export function bestResult(results: readonly StepResult[]): StepResult | null {
  for (const strategy of STRATEGY_PRIORITY) {
    const hit = results.find((r) => r.ok && r.strategy === strategy);
    if (hit) return hit;
  }
  return null;
}

/** The failure to report for a step whose strategies all failed: the highest-priority one. */
export function representativeFailure(results: readonly StepResult[]): StepResult | null {
  for (const strategy of STRATEGY_PRIORITY) {
    const hit = results.find((r) => r.strategy === strategy);
    if (hit) return hit;
  }
  return null;
}

/**
 * Starts the current plan step: a new round and its first tasks. EXPLORATORY dispatches all
 * three strategies at once; FALLBACK and CONSERVATIVE one; `summarize` always runs as a tool only.
 */
export function startStep(data: BlackboardData): { data: BlackboardData; tasks: TaskSpec[] } {
  const at = currentStep(data);
  if (!at) throw blackboardFault("no current step on the blackboard");
  const mode = at.step.tool === SUMMARIZE_TOOL ? "tool_only" : data.limits.execution;
  const order = MODE_STRATEGIES[mode];
  const first = mode === "parallel" ? [...order] : order.slice(0, 1);
  const round: ExecutionRound = { mode, order: [...order], pending: first, results: [] };
  const next: BlackboardData = {
    ...data,
    phase: "execute",
    round,
    step_outcome: null,
    step_perception: null,
    next_action: null,
  };
  // a re-run of the step backs off (500 ms, doubling, at most 8 s); its first run goes at once
  const delayMs = retryBackoffMs(data.step_retries);
  const tasks = first.map((s) => executeTask(next, s)).map((t) => (delayMs > 0 ? { ...t, delayMs } : t));
  return { data: next, tasks };
}

/** A strategy task that failed as a task (agent failure, deadline): recorded like a failed tool call. */
export function failedStrategy(
  data: BlackboardData,
  strategy: ExecutionStrategy,
  error: WireError,
  elapsedMs: number,
): StepResult {
  const at = currentStep(data);
  if (!at) throw blackboardFault("no current step on the blackboard");
  const tool = strategy === "tool" ? at.step.tool : STRATEGY_TOOL[strategy];
  return {
    strategy,
    tool,
    ok: false,
    output: null,
    error: { code: error.code, message: clip(error.message, 500), retryable: error.retryable },
    latency_ms: elapsedMs,
    attempts: 0,
    records: [{ tool, args_digest: null, latency_ms: elapsedMs, outcome: error.code, attempt: 0 }],
    citations: [],
  };
}

/** What a round does after one strategy's outcome. */
export type RoundStep =
  | { readonly kind: "wait"; readonly data: BlackboardData; readonly tasks: TaskSpec[] }
  | {
      readonly kind: "joined";
      readonly data: BlackboardData;
      readonly chosen: StepResult | null;
      readonly abandon: boolean;
    };

const describe = (r: StepResult) =>
  r.ok ? `${r.strategy} ok in ${Math.round(r.latency_ms)} ms` : `${r.strategy} failed (${r.error?.code ?? "error"})`;

/**
 * Folds one strategy's outcome into the round. Parallel: join when all are in, or at once when
 * the join deadline passed (`deadlinePassed`); sequential: join at the first success, else run
 * the next strategy; tool only: join.
 */
export function onStrategy(
  data: BlackboardData,
  strategy: ExecutionStrategy,
  result: StepResult,
  deadlinePassed: boolean,
): RoundStep {
  const round = data.round;
  if (!round || !round.pending.includes(strategy))
    throw blackboardFault(`no pending ${strategy} strategy in the round`);
  const updated: ExecutionRound = {
    ...round,
    pending: round.pending.filter((s) => s !== strategy),
    results: [...round.results, { ...result, strategy }],
  };
  switch (round.mode) {
    case "parallel":
      if (!deadlinePassed && updated.pending.length > 0)
        return { kind: "wait", data: { ...data, round: updated }, tasks: [] };
      return join(data, updated);
    case "sequential": {
      if (result.ok) return join(data, updated);
      const tried = new Set(updated.results.map((r) => r.strategy));
      const next = updated.order.find((s) => !tried.has(s));
      if (next === undefined) return join(data, updated);
      const waiting: BlackboardData = { ...data, round: { ...updated, pending: [next] } };
      return { kind: "wait", data: waiting, tasks: [executeTask(waiting, next)] };
    }
    case "tool_only":
      return join(data, updated);
  }
}

/** Ends a round: picks the best result, records every result and its tool calls, abandons what is still out. */
function join(data: BlackboardData, round: ExecutionRound): RoundStep {
  const at = currentStep(data);
  if (!at) throw blackboardFault("no current step on the blackboard");
  const chosen = bestResult(round.results);
  const where = { plan_version: at.plan.version, step_index: at.index };
  const records: StepResultRecord[] = round.results.map((result) => ({
    ...where,
    retry: data.step_retries,
    chosen: result === chosen,
    result,
  }));
  const perf: ToolPerformanceEntry[] = round.results.flatMap((r) =>
    r.records.map((record) => ({ ...where, strategy: r.strategy, record })),
  );
  const late = round.pending.length > 0 ? `; ${round.pending.join(", ")} abandoned at the join deadline` : "";
  const verdict = chosen ? `chose ${chosen.strategy}` : "every strategy failed";
  const next = traced(
    {
      ...data,
      round: { ...round, pending: [] },
      step_results: append(data.step_results, records, CAPS.step_results),
      tool_performance_log: append(data.tool_performance_log, perf, CAPS.tool_performance_log),
    },
    `Step ${at.index + 1} (${at.step.tool}) run ${data.step_retries + 1}: ${round.results.map(describe).join("; ")}${late}; ${verdict}.`,
  );
  return { kind: "joined", data: next, chosen, abandon: round.pending.length > 0 };
}

const resultEvent = (data: BlackboardData, strategy: ExecutionStrategy, r: StepResult): EventDraft =>
  toolResult(
    toolCallId(data, strategy),
    r.tool,
    r.ok,
    r.ok ? (r.output ?? "") : `${r.error?.code ?? "error"}: ${r.error?.message ?? ""}`,
    r.latency_ms,
    r.records.flatMap((x) => x.flags ?? []),
  );

/**
 * The `tool_result` events of one strategy's outcome: its own, and one for each strategy a join
 * at the deadline abandons, so every `tool_call` of the round gets its result. `data` is the
 * session before the outcome was folded in.
 */
export function toolResults(
  data: BlackboardData,
  strategy: ExecutionStrategy,
  result: StepResult,
  step: RoundStep,
  elapsedMs: number,
): EventDraft[] {
  const events = [resultEvent(data, strategy, result)];
  if (step.kind !== "joined" || !step.abandon) return events;
  for (const other of data.round?.pending ?? []) {
    if (other === strategy) continue;
    const abandoned = failedStrategy(
      data,
      other,
      { code: "deadline_exceeded", message: "abandoned at the join deadline", retryable: true, component: "executor" },
      elapsedMs,
    );
    events.push(resultEvent(data, other, abandoned));
  }
  return events;
}
