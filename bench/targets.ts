// The headline of `pnpm bench`: the runtime per transition and per agent step beside the floor,
// medians of the rounds, and the two ratio targets with PASS or MISS. See bench/README.md.
import type { FloorLevel } from "./floor/floor.js";
import type { Round } from "./rounds.js";
import { median, ms, round3 } from "./stats.js";

/** One level's figures in one round. */
export interface LevelFigures {
  readonly concurrency: number;
  /** The runtime: every gap between consecutive transitions (p50, p99), agent steps/s, sessions/s, CPU ms per agent step. */
  readonly transitionP50: number;
  readonly transitionP99: number;
  readonly agentStepsPerSecond: number;
  readonly sessionsPerSecond: number;
  readonly cpuMsPerStep: number;
  /** Context switches machine-wide ÷ agent steps: how often a process or thread was woken per step. */
  readonly ctxPerStep: number;
  /** The floor at the same level (null when it did not run). */
  readonly floorStepP50: number | null;
  readonly floorStepP99: number | null;
  readonly floorStepsPerSecond: number | null;
  readonly floorCpuMsPerStep: number | null;
  readonly floorCtxPerStep: number | null;
  /** transitionP50 ÷ floorStepP50, and agentStepsPerSecond ÷ floorStepsPerSecond (in the medians: the median of the rounds' ratios). */
  readonly p50Ratio: number | null;
  readonly stepsRatio: number | null;
}

/** A ratio target: a runtime figure over the floor's, within one run (bench/README.md, "The floor"). */
export interface Target {
  readonly id: "transition_p50_c1" | "agent_steps_per_s_c64";
  readonly what: string;
  /** The ratio must be at most (`max`) or at least (`min`) `limit`. */
  readonly bound: "max" | "min";
  readonly limit: number;
  /** The ratio in each round (runtime and floor of the same round). */
  readonly perRound: readonly number[];
  /** Median of the rounds' ratios; null when a level the target needs did not run. */
  readonly ratio: number | null;
  readonly verdict: "PASS" | "MISS" | "n/a";
}

export interface Headline {
  /** Medians of the rounds, per level. */
  readonly levels: readonly LevelFigures[];
  /** Each round's figures, per level, with its machine load. */
  readonly rounds: ReadonlyArray<{
    readonly round: number;
    readonly order: string;
    readonly load: Round["load"];
    readonly levels: readonly LevelFigures[];
  }>;
  readonly targets: readonly Target[];
}

function figuresOf(r: Round): LevelFigures[] {
  return r.runtime.map((l) => {
    const f: FloorLevel | undefined = r.floor.find((x) => x.concurrency === l.level.concurrency);
    const steps = (l.level.agentStepsPerSecond * l.level.elapsedMs) / 1000;
    return {
      concurrency: l.level.concurrency,
      transitionP50: l.level.transitionMs.p50,
      transitionP99: l.level.transitionMs.p99,
      agentStepsPerSecond: l.level.agentStepsPerSecond,
      sessionsPerSecond: l.level.sessionsPerSecond,
      cpuMsPerStep: steps > 0 ? Object.values(l.cpuMsByProcess).reduce((a, b) => a + b, 0) / steps : Number.NaN,
      ctxPerStep: steps > 0 ? l.ctxSwitches / steps : Number.NaN,
      floorStepP50: f?.stepMs.p50 ?? null,
      floorStepP99: f?.stepMs.p99 ?? null,
      floorStepsPerSecond: f?.stepsPerSecond ?? null,
      floorCpuMsPerStep: f?.cpuMsPerStep ?? null,
      floorCtxPerStep: f?.ctxSwitchesPerStep ?? null,
      p50Ratio: f ? l.level.transitionMs.p50 / f.stepMs.p50 : null,
      stepsRatio: f ? l.level.agentStepsPerSecond / f.stepsPerSecond : null,
    };
  });
}

function target(id: Target["id"], what: string, bound: Target["bound"], limit: number, perRound: number[]): Target {
  const ratio = perRound.length === 0 ? null : median(perRound);
  const ok = ratio !== null && Number.isFinite(ratio) && (bound === "max" ? ratio <= limit : ratio >= limit);
  return { id, what, bound, limit, perRound, ratio, verdict: ratio === null ? "n/a" : ok ? "PASS" : "MISS" };
}

/** The headline figures and targets from the rounds. */
export function headlineOf(rounds: readonly Round[]): Headline {
  const perRound = rounds.map((r) => ({ round: r.round, order: r.order, load: r.load, levels: figuresOf(r) }));
  const cs = [...new Set(perRound.flatMap((r) => r.levels.map((l) => l.concurrency)))];
  const levels = cs.map((c): LevelFigures => {
    const at = perRound.flatMap((r) => r.levels.filter((l) => l.concurrency === c));
    const med = (pick: (l: LevelFigures) => number | null) =>
      median(at.map(pick).filter((x): x is number => x !== null));
    const hasFloor = at.some((l) => l.floorStepP50 !== null);
    return {
      concurrency: c,
      transitionP50: med((l) => l.transitionP50),
      transitionP99: med((l) => l.transitionP99),
      agentStepsPerSecond: med((l) => l.agentStepsPerSecond),
      sessionsPerSecond: med((l) => l.sessionsPerSecond),
      cpuMsPerStep: med((l) => l.cpuMsPerStep),
      ctxPerStep: med((l) => l.ctxPerStep),
      floorStepP50: hasFloor ? med((l) => l.floorStepP50) : null,
      floorStepP99: hasFloor ? med((l) => l.floorStepP99) : null,
      floorStepsPerSecond: hasFloor ? med((l) => l.floorStepsPerSecond) : null,
      floorCpuMsPerStep: hasFloor ? med((l) => l.floorCpuMsPerStep) : null,
      floorCtxPerStep: hasFloor ? med((l) => l.floorCtxPerStep) : null,
      p50Ratio: hasFloor ? med((l) => l.p50Ratio) : null,
      stepsRatio: hasFloor ? med((l) => l.stepsRatio) : null,
    };
  });
  const ratios = (c: number, f: (l: LevelFigures) => number | null) =>
    perRound
      .flatMap((r) => r.levels.filter((l) => l.concurrency === c))
      .map(f)
      .filter((x): x is number => x !== null);
  const targets = [
    target(
      "transition_p50_c1",
      "runtime per-transition p50 at c=1 ÷ floor per-step p50 at c=1",
      "max",
      1.5,
      ratios(1, (l) => l.p50Ratio),
    ),
    target(
      "agent_steps_per_s_c64",
      "runtime agent steps/s at c=64 ÷ floor steps/s at c=64",
      "min",
      0.4,
      ratios(64, (l) => l.stepsRatio),
    ),
  ];
  return { levels, rounds: perRound, targets };
}

const fmt = (x: number | null, digits = 2) => (x === null || !Number.isFinite(x) ? "-" : x.toFixed(digits));
const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s);

function table(head: string[], rows: string[][], leftCols: number): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) =>
    "  " + r.map((c, i) => (i < leftCols ? pad(c, widths[i]!) : lpad(c, widths[i]!))).join("  ");
  return [line(head), ...rows.map(line)].join("\n");
}

const row = (label: string[], l: LevelFigures) => [
  ...label,
  String(l.concurrency),
  ms(l.transitionP50),
  ms(l.transitionP99),
  l.agentStepsPerSecond.toFixed(0),
  fmt(l.cpuMsPerStep),
  fmt(l.ctxPerStep, 1),
  l.floorStepP50 === null ? "-" : ms(l.floorStepP50),
  l.floorStepP99 === null ? "-" : ms(l.floorStepP99),
  fmt(l.floorStepsPerSecond, 0),
  fmt(l.floorCpuMsPerStep),
  fmt(l.floorCtxPerStep, 1),
  fmt(l.p50Ratio),
  fmt(l.stepsRatio),
];

const HEAD = [
  "c",
  "transition p50",
  "p99",
  "agent steps/s",
  "CPU ms/step",
  "wakes/step",
  "floor step p50",
  "p99",
  "floor steps/s",
  "floor CPU ms/step",
  "floor wakes/step",
  "p50 ratio",
  "steps/s ratio",
];

/** The headline section of the report. */
export function renderHeadline(h: Headline, stepsPerSession: number): string[] {
  return [
    `The runtime beside the floor (${h.rounds.length === 1 ? "one round" : `medians of ${h.rounds.length} interleaved rounds`}; ms)`,
    `  runtime transition = gap between consecutive transitions (the bench's receipt of their events, sub-ms); floor step = Redis read → ack of one`,
    `  durable step (bench/floor, raw clients, ${stepsPerSession} steps per session as the runtime's); CPU = all processes of the side ÷ steps;`,
    `  wakes = context switches machine-wide (/proc/stat ctxt, every process and thread woken, other users' too) ÷ steps;`,
    `  ratios = runtime ÷ floor within a round (p50: transition p50 ÷ floor step p50; steps/s: agent steps/s ÷ floor steps/s), the median row the rounds' median`,
    table(
      ["", ...HEAD],
      h.levels.map((l) => row(["median"], l)),
      1,
    ),
    "",
    "Targets (ratio = median of the rounds' ratios)",
    ...h.targets.map(
      (t) =>
        `  ${t.verdict.padEnd(4)} ${t.what}: ${fmt(t.ratio)} (target ${t.bound === "max" ? "≤" : "≥"} ${t.limit}; rounds ${t.perRound.map((x) => fmt(x)).join(", ") || "-"})`,
    ),
    "",
    "Each round (R = runtime, F = floor, in the order they ran at each level; load average 1/5/15 min at start → end)",
    table(
      ["round", "order", "load avg", "busy", ...HEAD],
      h.rounds.flatMap((r) =>
        r.levels.map((l) =>
          row(
            [
              String(r.round),
              r.order,
              `${r.load.loadavgStart} → ${r.load.loadavgEnd}`,
              `${r.load.machineBusyPct.toFixed(0)}%`,
            ],
            l,
          ),
        ),
      ),
      4,
    ),
  ];
}

/** The floor's CPU per step by process, each level's rounds pooled (ms of CPU ÷ steps). */
export function renderFloorCpu(levels: readonly FloorLevel[]): string[] {
  const cs = [...new Set(levels.map((l) => l.concurrency))];
  const procs = [...new Set(levels.flatMap((l) => Object.keys(l.cpuMsByProcess)))];
  const per = (c: number, p: string | null) => {
    const at = levels.filter((l) => l.concurrency === c);
    const steps = at.reduce((a, l) => a + l.steps, 0);
    const cpu = at.reduce(
      (a, l) =>
        a + (p === null ? Object.values(l.cpuMsByProcess).reduce((x, y) => x + y, 0) : (l.cpuMsByProcess[p] ?? 0)),
      0,
    );
    return steps === 0 ? "-" : (cpu / steps).toFixed(3);
  };
  return [
    "The floor's CPU per step by process (ms of CPU ÷ steps, rounds pooled; /proc ticks are 10 ms, so short levels read coarse)",
    table(
      ["process", ...cs.map((c) => `c=${c}`)],
      [...procs.map((p) => [p, ...cs.map((c) => per(c, p))]), ["total", ...cs.map((c) => per(c, null))]],
      1,
    ),
  ];
}

/** The targets for the one-line summary. */
export function targetsLine(h: Headline): string {
  return h.targets.map((t) => `${t.id} ${fmt(t.ratio)} ${t.verdict}`).join(", ");
}

/** The headline for the JSON, rounded to µs. */
export function headlineJson(h: Headline): unknown {
  const lv = (l: LevelFigures) =>
    Object.fromEntries(Object.entries(l).map(([k, v]) => [k, typeof v === "number" ? round3(v) : v]));
  return {
    levels: h.levels.map(lv),
    rounds: h.rounds.map((r) => ({
      round: r.round,
      order: r.order,
      load: { ...r.load, machineBusyPct: round3(r.load.machineBusyPct) },
      levels: r.levels.map(lv),
    })),
    targets: h.targets.map((t) => ({
      ...t,
      perRound: t.perRound.map(round3),
      ratio: t.ratio === null ? null : round3(t.ratio),
    })),
  };
}
