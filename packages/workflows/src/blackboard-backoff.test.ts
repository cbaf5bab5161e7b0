import { describe, expect, it } from "vitest";
import type { TaskEnvelope } from "@agentmesh/contracts";
import { retryBackoffMs } from "./blackboard-strategy.js";
import { bbHarness, bbOut, type BbHarness } from "./blackboard-testkit.js";
import { DEFAULTS, failure } from "./testing.js";

/** Start through the plan, answering intake and memory well. */
function planned(h: BbHarness) {
  h.start();
  h.answer("perception.perceive", bbOut.perception());
  h.answer("executor.list_tools", bbOut.tools());
  h.answer("memory.update", bbOut.memory());
  return h.answer("decision.plan", bbOut.plan());
}

const envelopeOf = (h: BbHarness, key: string): TaskEnvelope => {
  const env = h.sent.get(h.task(key).task_id);
  if (!env) throw new Error(`no envelope for ${key}`);
  return env;
};

/** Runs the current step once and has the critic reject it. */
function rejectStep(h: BbHarness) {
  h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
  h.answer("perception.perceive", bbOut.perception());
  h.answer("critic.report", bbOut.report(false));
  h.answer("memory.update", bbOut.memory());
}

/** When the task was dispatched: the harness steps at `now` and then moves its clock on by 1 s. */
const dispatchedAt = (h: BbHarness) => h.now - 1000;

describe("blackboard retries back off exponentially", () => {
  it("waits 500 ms × 2^(n-1), at most 8 s", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map(retryBackoffMs)).toEqual([0, 500, 1000, 2000, 4000, 8000, 8000, 8000]);
  });

  it("a step's first run goes at once; each re-run starts no earlier than its backoff, less at most a tenth of jitter, its deadline counted from then", () => {
    const h = bbHarness({ profile: "FALLBACK" });
    planned(h);
    const first = envelopeOf(h, "executor.execute:tool");
    expect(first.not_before).toBeUndefined();
    const waits: number[] = [];
    for (let retry = 1; retry <= 4; retry++) {
      rejectStep(h);
      const env = envelopeOf(h, "executor.execute:tool");
      expect(env.attempt).toBe(retry);
      const wait = (env.not_before ?? 0) - dispatchedAt(h);
      const base = retryBackoffMs(retry);
      expect(wait).toBeGreaterThanOrEqual(base * 0.9);
      expect(wait).toBeLessThanOrEqual(base);
      // the join deadline (3 × 5 s + 5 s) starts when the task may start
      expect((env.deadline_at ?? 0) - (env.not_before ?? 0)).toBe(20_000);
      expect(h.task("executor.execute:tool").deadline_at).toBe(env.deadline_at);
      waits.push(wait);
    }
    expect(waits.every((w, i) => i === 0 || w > (waits[i - 1] ?? 0))).toBe(true);
  });

  it("the jitter is derived from the task id: a replayed step waits the same, different task ids wait differently", () => {
    const runs = [bbHarness(), bbHarness()].map((h) => {
      planned(h);
      rejectStep(h);
      const env = envelopeOf(h, "executor.execute:tool");
      return { id: env.task_id, wait: (env.not_before ?? 0) - dispatchedAt(h) };
    });
    expect(runs[0]).toEqual(runs[1]);
    // many different task ids spread over the tenth below the base
    const h = bbHarness({ profile: "FALLBACK" });
    planned(h);
    const seen = new Set<number>();
    for (let retry = 1; retry <= 4; retry++) {
      rejectStep(h);
      const env = envelopeOf(h, "executor.execute:tool");
      seen.add(retryBackoffMs(retry) - ((env.not_before ?? 0) - dispatchedAt(h)));
    }
    expect(seen.size).toBeGreaterThan(1);
  });

  it("a retryable agent failure is re-dispatched after 500 ms, then 1 s", () => {
    const h = bbHarness();
    h.start();
    h.answer("executor.list_tools", bbOut.tools());
    h.failTask("perception.perceive", failure("model_error", true, "flaky"));
    const once = envelopeOf(h, "perception.perceive");
    const w1 = (once.not_before ?? 0) - dispatchedAt(h);
    expect(w1).toBeGreaterThanOrEqual(450);
    expect(w1).toBeLessThanOrEqual(500);
    h.failTask("perception.perceive", failure("model_error", true, "flaky"));
    const twice = envelopeOf(h, "perception.perceive");
    const w2 = (twice.not_before ?? 0) - dispatchedAt(h);
    expect(w2).toBeGreaterThanOrEqual(900);
    expect(w2).toBeLessThanOrEqual(1000);
  });
});

describe("the critic's verdict agrees with its scores", () => {
  it("'acceptable' with quality under 0.6 is overruled: the step is retried, and the trace says why", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    h.answer("perception.perceive", bbOut.perception());
    h.answer("critic.report", bbOut.report(true, { quality: 0.55 }));
    expect(h.state.data.next_action).toMatchObject({ kind: "retry" });
    expect(h.state.data.trace.at(-1)).toContain(
      "the critic said acceptable but its scores say not acceptable (quality 0.55 (needs ≥ 0.6), hallucination risk 0.1 (needs ≤ 0.4)): the scores decide",
    );
  });

  it("'acceptable' with hallucination risk over 0.4 is overruled", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    h.answer("perception.perceive", bbOut.perception());
    h.answer("critic.report", bbOut.report(true, { hallucination_risk: 0.41 }));
    expect(h.state.data.next_action).toMatchObject({ kind: "retry" });
  });

  it("'not acceptable' with good scores is overruled: the step is accepted", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    h.answer("perception.perceive", bbOut.perception());
    h.answer("critic.report", bbOut.report(false, { quality: 0.6, hallucination_risk: 0.4 }));
    expect(h.state.data.next_action).toEqual({ kind: "advance" });
    expect(h.state.data.trace.at(-1)).toContain("the critic said not acceptable but its scores say acceptable");
  });

  it("a verdict its scores agree with is taken as it is, with no note", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    h.answer("perception.perceive", bbOut.perception());
    h.answer("critic.report", bbOut.report(true));
    expect(h.state.data.next_action).toEqual({ kind: "advance" });
    expect(h.state.data.trace.at(-1)).not.toContain("the scores decide");
  });

  it("the thresholds are per strategy profile, kept in the session's limits", () => {
    const h = bbHarness({ profile: "EXPLORATORY" });
    expect(h.state.data.limits).toMatchObject({ min_quality: 0.6, max_hallucination_risk: 0.4 });
  });
});

describe("the session's tool-call cap is counted by the coordinator in the session state", () => {
  const allowanceOf = (h: BbHarness, key: string) => envelopeOf(h, key).allowance?.tool_calls;

  it("each executor task carries the calls left (the configured cap less those dispatched before it); list_tools counts none", () => {
    const h = bbHarness({ profile: "FALLBACK", defaults: { ...DEFAULTS, maxToolCallsPerSession: 3 } });
    h.start();
    expect(envelopeOf(h, "executor.list_tools").allowance).toBeUndefined();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    h.answer("decision.plan", bbOut.plan());
    expect(h.state.meta).toMatchObject({ max_tool_calls: 3, usage: { tool_calls: 1 } });
    const seen = [allowanceOf(h, "executor.execute:tool")];
    for (let retry = 1; retry <= 4; retry++) {
      rejectStep(h);
      seen.push(allowanceOf(h, "executor.execute:tool"));
    }
    expect(seen).toEqual([3, 2, 1, 0, 0]);
    expect(h.state.meta.usage.tool_calls).toBe(5);
  });

  it("the count lives in the stored state: a coordinator that restarts and steps the stored session goes on counting", () => {
    const h = bbHarness({ defaults: { ...DEFAULTS, maxToolCallsPerSession: 2 } });
    planned(h);
    // what Redis holds, as JSON, stepped by another process
    const stored = JSON.parse(JSON.stringify(h.state)) as typeof h.state;
    h.state = stored;
    rejectStep(h);
    expect(allowanceOf(h, "executor.execute:tool")).toBe(1);
    expect(h.state.meta.usage.tool_calls).toBe(2);
  });

  it("a session stored before the count existed is counted from 0 against the default of 100", () => {
    const h = bbHarness();
    h.start();
    const { tool_calls: _t, ...usage } = h.state.meta.usage;
    const { max_tool_calls: _m, ...meta } = h.state.meta;
    h.state = { ...h.state, meta: { ...meta, usage } };
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    h.answer("decision.plan", bbOut.plan());
    expect(allowanceOf(h, "executor.execute:tool")).toBe(100);
  });
});
