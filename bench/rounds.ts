// The measured part of `pnpm bench`: rounds in which the runtime's levels and the floor's
// alternate (R F, then F R, …), each round with its machine load. See bench/README.md.
import { loadavg } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Cluster } from "../test/e2e/harness.js";
import type { EventRouter } from "./events.js";
import type { Floor, FloorLevel } from "./floor/floor.js";
import type { LevelReport } from "./report.js";
import type { RoundTripLab } from "./roundtrips.js";
import { aggregate, runLevel } from "./sessions.js";
import { diffTotals, serviceStats, totalsByService } from "./services.js";
import { summarize } from "./stats.js";
import { busyPercent, cpuMs, machineCpu } from "./sysinfo.js";
import type { Workload } from "./workloads.js";

/** Machine load around one round (the machine is shared: read every figure with it). */
export interface RoundLoad {
  readonly loadavgStart: string;
  readonly loadavgEnd: string;
  /** Share of all cores busy over the round, machine-wide. */
  readonly machineBusyPct: number;
}

/** One round: every runtime level and every floor level once, in `order`. */
export interface Round {
  readonly round: number;
  /** R = the runtime, F = the floor, in the order they ran at each level. */
  readonly order: "RF" | "FR";
  readonly runtime: readonly LevelReport[];
  readonly floor: readonly FloorLevel[];
  readonly load: RoundLoad;
}

export interface RoundsContext {
  readonly cluster: Cluster;
  readonly router: EventRouter;
  readonly workload: Workload;
  readonly nc: NatsConnection;
  readonly lab: RoundTripLab;
  readonly floor: Floor;
  /** The runtime's processes (services, servers, the bench), label → pid. */
  readonly pids: ReadonlyMap<string, number>;
  readonly prefix: string;
  /** Session id stem, unique per run. */
  readonly tag: string;
  readonly levels: readonly number[];
  readonly sessions: ReadonlyMap<number, number>;
  readonly rounds: number;
  readonly timeoutMs: number;
  /** Agent steps per session, when already known (from the warm-up); else the first runtime level's. */
  readonly steps: number | null;
  /** A measured runtime window, for --cpu-prof (same label in every round). */
  onWindow(label: string, startUs: number, endUs: number): void;
  log(line: string): void;
}

const monoUs = () => Number(process.hrtime.bigint() / 1000n);
const loadNow = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

function progress(log: (s: string) => void, label: string): (done: number, total: number, elapsedMs: number) => void {
  let shown = 0;
  return (done, total, elapsedMs) => {
    const step = Math.max(1, Math.ceil(total / 4));
    if (done === total || done >= shown + step) {
      shown = done;
      log(`  ${label}: ${done}/${total} sessions done (${(done / (elapsedMs / 1000)).toFixed(1)}/s so far)`);
    }
  };
}

/** One runtime level: sessions, CPU per process, service counters and the under-load probe. */
async function runtimeLevel(x: RoundsContext, round: number, c: number, firstIndex: number): Promise<LevelReport> {
  const n = x.sessions.get(c)!;
  x.log(`bench: round ${round}, runtime at c=${c}, ${n} sessions…`);
  const before = totalsByService(await serviceStats(x.nc, x.prefix));
  const cpuBefore = new Map([...x.pids].map(([k, pid]) => [k, cpuMs(pid)]));
  const machineBefore = machineCpu();
  const probe = x.lab.probe(25);
  const startUs = monoUs();
  let machineAfter = machineBefore;
  const cpuMsByProcess: Record<string, number> = {};
  const timedEnd = () => {
    x.onWindow(`c=${c}`, startUs, monoUs());
    machineAfter = machineCpu();
    for (const [k, pid] of x.pids) {
      const a = cpuBefore.get(k);
      const b = cpuMs(pid);
      if (a != null && b != null) cpuMsByProcess[k] = b - a;
    }
  };
  const level = await runLevel({
    cluster: x.cluster,
    router: x.router,
    workload: x.workload,
    concurrency: c,
    sessions: n,
    firstIndex,
    stem: `${x.tag}-r${round}c${c}`,
    timeoutMs: x.timeoutMs,
    onProgress: progress(x.log, `r${round} c=${c}`),
    onTimedEnd: timedEnd,
  });
  const probed = await probe.stop();
  const serviceCounters = diffTotals(before, totalsByService(await serviceStats(x.nc, x.prefix)));
  return {
    level,
    casConflicts: serviceCounters.coordinator?.conflicts ?? 0,
    serviceCounters,
    machineBusyPct: busyPercent(machineBefore, machineAfter),
    ctxSwitches: machineAfter.ctxt - machineBefore.ctxt,
    cpuMsByProcess,
    probe: probed,
  };
}

/** Which side runs first at each level of round `round` (1-based): R F, F R, R F, … */
export function roundOrder(round: number): Round["order"] {
  return round % 2 === 1 ? "RF" : "FR";
}

/**
 * Runs `rounds` rounds. At each level the runtime and the floor run back to back, R F in odd
 * rounds and F R in even ones (R F, F R, R F, …), so a steady drift of the machine's load weighs
 * on both alike. The floor runs as many steps per session as the runtime's sessions take.
 */
export async function runRounds(x: RoundsContext): Promise<{ rounds: Round[]; steps: number }> {
  const rounds: Round[] = [];
  let steps = x.steps;
  let firstIndex = 0;
  for (let round = 1; round <= x.rounds; round++) {
    const order = roundOrder(round);
    const loadavgStart = loadNow();
    const machineBefore = machineCpu();
    const runtime: LevelReport[] = [];
    const floor: FloorLevel[] = [];
    for (const c of x.levels) {
      const n = x.sessions.get(c)!;
      for (const what of order) {
        if (what === "R") {
          const l = await runtimeLevel(x, round, c, firstIndex);
          firstIndex += n;
          runtime.push(l);
          steps ??= l.level.ok > 0 ? l.level.stepsPerSession.p50 : null;
        } else {
          // the first round runs R first, so the runtime has told how many steps a session takes
          const s = steps ?? 7;
          x.log(`bench: round ${round}, floor at c=${c}, ${n} sessions of ${s} steps…`);
          const f = await x.floor.run(c, n, s, `${x.tag}-r${round}c${c}`);
          x.log(
            `  floor c=${c}: ${f.stepsPerSecond.toFixed(0)} steps/s, step p50 ${f.stepMs.p50.toFixed(2)} ms${f.problems.length ? `, ${f.problems.length} problem(s)` : ""}`,
          );
          floor.push(f);
        }
      }
    }
    rounds.push({
      round,
      order,
      runtime,
      floor,
      load: { loadavgStart, loadavgEnd: loadNow(), machineBusyPct: busyPercent(machineBefore, machineCpu()) },
    });
  }
  return { rounds, steps: steps ?? 7 };
}

/** A level's runtime figures over every round, as one level (sessions pooled, elapsed and CPU summed). */
export function poolLevel(ls: readonly LevelReport[]): LevelReport {
  const first = ls[0]!;
  if (ls.length === 1) return first;
  const elapsed = ls.reduce((a, l) => a + l.level.elapsedMs, 0);
  const sum = (rs: ReadonlyArray<Record<string, number>>) => {
    const out: Record<string, number> = {};
    for (const r of rs) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  const counters: Record<string, Record<string, number>> = {};
  for (const name of new Set(ls.flatMap((l) => Object.keys(l.serviceCounters)))) {
    counters[name] = sum(ls.map((l) => l.serviceCounters[name] ?? {}));
    // in_flight is a gauge: the last round's value
    const last = ls.at(-1)!.serviceCounters[name]?.in_flight;
    if (last !== undefined) counters[name].in_flight = last;
  }
  const nats = ls.flatMap((l) => l.probe.samples.nats_request);
  const cas = ls.flatMap((l) => l.probe.samples.redis_cas);
  const level = aggregate(
    first.level.concurrency,
    elapsed,
    ls.flatMap((l) => l.level.results),
  );
  return {
    level,
    casConflicts: ls.reduce((a, l) => a + l.casConflicts, 0),
    serviceCounters: counters,
    machineBusyPct: ls.reduce((a, l) => a + l.machineBusyPct * l.level.elapsedMs, 0) / elapsed,
    ctxSwitches: ls.reduce((a, l) => a + l.ctxSwitches, 0),
    cpuMsByProcess: sum(ls.map((l) => l.cpuMsByProcess)),
    probe: {
      nats_request: summarize(nats),
      redis_cas: summarize(cas),
      samples: { nats_request: nats, redis_cas: cas },
    },
  };
}
