// `pnpm bench` beside the floor: --rounds, the order of the rounds, how a level is pooled over
// the rounds, and the two ratio targets (medians of the rounds' ratios, PASS or MISS).
import { describe, expect, it } from "vitest";
import { parseArgs, type BenchOptions } from "../../bench/args.js";
import type { FloorLevel } from "../../bench/floor/floor.js";
import type { LevelReport } from "../../bench/report.js";
import { poolLevel, roundOrder, type Round } from "../../bench/rounds.js";
import { aggregate, type SessionResult } from "../../bench/sessions.js";
import { summarize } from "../../bench/stats.js";
import { headlineOf, renderHeadline } from "../../bench/targets.js";
import { median } from "../../bench/stats.js";

const options = (argv: string[]): BenchOptions => {
  const o = parseArgs(argv);
  if (o === "help") throw new Error("unexpected help");
  return o;
};

/** A verified session whose transitions are `gaps` ms apart. */
function session(i: number, gaps: readonly number[]): SessionResult {
  return {
    index: i,
    sessionId: `s${i}`,
    outcome: "ok",
    reason: null,
    wallMs: 100,
    firstEventMs: 1,
    submitMs: 1,
    steps: gaps.length,
    handlerMs: 0,
    overheadPerStepMs: 10,
    transitions: gaps.length + 1,
    events: 10,
    duplicateEvents: 0,
    hops: gaps.map((ms) => ({ what: "planner.plan", ms })),
    headMs: 1,
    tailMs: 1,
  };
}

/** A runtime level: `n` sessions of the given gaps over `elapsedMs`, `cpuMs` of CPU in all. */
function runtime(
  c: number,
  n: number,
  gaps: readonly number[],
  elapsedMs: number,
  cpuMs: number,
  counters: Record<string, number> = {},
  ctxSwitches = 0,
): LevelReport {
  const level = aggregate(
    c,
    elapsedMs,
    Array.from({ length: n }, (_, i) => session(i, gaps)),
  );
  const samples = { nats_request: [1], redis_cas: [2] };
  return {
    level,
    casConflicts: 0,
    serviceCounters: { coordinator: counters },
    machineBusyPct: 50,
    ctxSwitches,
    cpuMsByProcess: { "coordinator#1": cpuMs },
    probe: { nats_request: summarize(samples.nats_request), redis_cas: summarize(samples.redis_cas), samples },
  };
}

function floor(c: number, stepP50: number, stepsPerSecond: number, ctxSwitchesPerStep = 0): FloorLevel {
  return {
    concurrency: c,
    sessions: 10,
    sessionsOk: 10,
    stepsPerSession: 7,
    steps: 70,
    elapsedMs: 70_000 / stepsPerSecond,
    stepsPerSecond,
    stepMs: summarize([stepP50]),
    cpuMsByProcess: { "floor worker": 70 },
    cpuMsPerStep: 1,
    machineBusyPct: 50,
    ctxSwitchesPerStep,
    strays: 0,
    problems: [],
  };
}

const load = { loadavgStart: "1.00 1.00 1.00", loadavgEnd: "1.00 1.00 1.00", machineBusyPct: 50 };

describe("pnpm bench --rounds", () => {
  it("runs 3 rounds by default (--quick too) and takes another count", () => {
    expect(options([]).rounds).toBe(3);
    expect(options(["--quick"]).rounds).toBe(3);
    expect(options(["--rounds", "5"]).rounds).toBe(5);
    expect(() => parseArgs(["--rounds", "0"])).toThrow(/positive integer/);
  });

  it("alternates which side runs first: R F, F R, R F, …", () => {
    expect([1, 2, 3, 4].map(roundOrder)).toEqual(["RF", "FR", "RF", "FR"]);
  });
});

describe("a runtime level pooled over the rounds", () => {
  it("joins the sessions, sums elapsed time, CPU and counters, keeps the last in_flight", () => {
    const pooled = poolLevel([
      runtime(1, 2, [10, 20], 1000, 30, { applied: 3, in_flight: 2 }),
      runtime(1, 3, [30], 2000, 60, { applied: 4, in_flight: 1 }),
    ]);
    expect(pooled.level.sessions).toBe(5);
    expect(pooled.level.elapsedMs).toBe(3000);
    expect(pooled.level.sessionsPerSecond).toBeCloseTo(5 / 3);
    expect(pooled.level.transitionMs.n).toBe(7);
    expect(pooled.cpuMsByProcess).toEqual({ "coordinator#1": 90 });
    expect(poolLevel([runtime(1, 1, [1], 1000, 0, {}, 700), runtime(1, 1, [1], 1000, 0, {}, 300)]).ctxSwitches).toBe(
      1000,
    );
    expect(pooled.serviceCounters.coordinator).toEqual({ applied: 7, in_flight: 1 });
    expect(pooled.probe.nats_request.n).toBe(2);
  });
});

describe("the runtime beside the floor", () => {
  it("takes every gap between transitions, and agent steps per second, from the verified sessions", () => {
    const l = runtime(64, 4, [1, 2, 3, 4, 5, 6, 7], 2000, 0).level;
    expect(l.transitionMs.n).toBe(28);
    expect(l.transitionMs.p50).toBe(4);
    expect(l.agentStepsPerSecond).toBe(14);
  });

  it("reads each ratio within a round and takes the median of the rounds", () => {
    // c=1: transition p50 3 ms in every round, floor p50 2, 1 and 4 ms → ratios 1.5, 3, 0.75 → 1.5 PASS
    // c=64: 7 steps × 100 sessions in 1 s = 700 agent steps/s, floor 1000, 2000, 1500 steps/s → 0.7, 0.35, 0.47 → 0.47 PASS
    const round = (i: number, f1: number, f64: number): Round => ({
      round: i,
      order: roundOrder(i),
      load,
      runtime: [runtime(1, 10, [3, 3, 3, 3, 3, 3, 3], 1000, 70), runtime(64, 100, [9, 9, 9, 9, 9, 9, 9], 1000, 700)],
      floor: [floor(1, f1, 500), floor(64, 10, f64)],
    });
    const h = headlineOf([round(1, 2, 1000), round(2, 1, 2000), round(3, 4, 1500)]);
    const [p50, steps] = h.targets;
    expect(p50).toMatchObject({ id: "transition_p50_c1", bound: "max", limit: 1.5, verdict: "PASS" });
    expect(p50!.perRound).toEqual([1.5, 3, 0.75]);
    expect(p50!.ratio).toBe(1.5);
    expect(steps).toMatchObject({ id: "agent_steps_per_s_c64", bound: "min", limit: 0.4, verdict: "PASS" });
    expect(steps!.ratio).toBeCloseTo(700 / 1500);
    expect(h.levels.find((l) => l.concurrency === 1)).toMatchObject({
      transitionP50: 3,
      floorStepP50: 2,
      p50Ratio: 1.5,
      cpuMsPerStep: 1,
    });
    expect(h.rounds.map((r) => r.order)).toEqual(["RF", "FR", "RF"]);
  });

  it("counts wake-ups (context switches machine-wide) per step on both sides, and shows them", () => {
    // 10 sessions × 7 steps = 70 agent steps with 1,400 switches → 20 per step; the floor's says 3.5
    const r: Round = {
      round: 1,
      order: "RF",
      load,
      runtime: [runtime(1, 10, [3, 3, 3, 3, 3, 3, 3], 1000, 70, {}, 1400)],
      floor: [floor(1, 2, 500, 3.5)],
    };
    const h = headlineOf([r]);
    expect(h.levels[0]).toMatchObject({ ctxPerStep: 20, floorCtxPerStep: 3.5 });
    const text = renderHeadline(h, 7).join("\n");
    const head = text
      .split("\n")
      .find((l) => l.includes("wakes/step"))!
      .trim()
      .split(/\s{2,}/);
    const median = text
      .split("\n")
      .find((l) => l.trim().startsWith("median"))!
      .trim()
      .split(/\s{2,}/);
    // the header's first cell (over "median") is empty, so trimmed away
    expect(median[head.indexOf("wakes/step") + 1]).toBe("20.0");
    expect(median[head.indexOf("floor wakes/step") + 1]).toBe("3.5");
  });

  it("says MISS past a limit, and n/a when a level did not run", () => {
    const only1 = (f1: number): Round => ({
      round: 1,
      order: "RF",
      load,
      runtime: [runtime(1, 10, [3, 3, 3, 3, 3, 3, 3], 1000, 70)],
      floor: [floor(1, f1, 500)],
    });
    const h = headlineOf([only1(1.9)]);
    expect(h.targets[0]).toMatchObject({ verdict: "MISS" });
    expect(h.targets[0]!.ratio).toBeCloseTo(3 / 1.9);
    expect(h.targets[1]).toMatchObject({ verdict: "n/a", ratio: null, perRound: [] });
  });

  it("takes the median of an even count as the mean of the middle two", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});
