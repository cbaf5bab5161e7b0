// `pnpm bench --concurrent N`: N sessions in flight at once on one coordinator and one replica per
// role, every model answer taking --model-latency-ms (a timer inside the offline engine). Reports
// sessions/s, wall p50/p99, the peak of live sessions, every process's peak RSS (VmHWM) and the
// service counters that must stay 0. See bench/README.md ("Many concurrent sessions").
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import type { Cluster } from "../test/e2e/harness.js";
import type { EventRouter } from "./events.js";
import { runLevel, type LevelResult } from "./sessions.js";
import { diffTotals, serviceStats, totalsByService } from "./services.js";
import { ms, roundSummary, round3 } from "./stats.js";
import { busyPercent, cpuMs, hwmKiB, machineCpu, rssKiB } from "./sysinfo.js";
import type { Workload } from "./workloads.js";

/** What the run is given. */
export interface ConcurrentOptions {
  readonly cluster: Cluster;
  readonly router: EventRouter;
  readonly workload: Workload;
  readonly nc: NatsConnection;
  readonly redis: Redis;
  readonly prefix: string;
  /** Process label → pid; the bench's own process is left out of the RSS budget. */
  readonly pids: ReadonlyMap<string, number>;
  readonly sessions: number;
  readonly submitWindow: number;
  readonly stem: string;
  readonly timeoutMs: number;
  /** Sum of the services' and servers' VmHWM must stay below this, KiB. */
  readonly rssBudgetKiB: number;
  readonly log: (line: string) => void;
}

/** One sample of the run's timeline, taken every second. */
export interface Sample {
  readonly atS: number;
  readonly live: number;
  readonly done: number;
  /** Σ VmRSS of the services and servers, KiB. */
  readonly rssKiB: number;
  /** Redis `used_memory`, bytes (null when INFO failed). */
  readonly redisUsedBytes: number | null;
}

/** A target of the mode and whether the run met it. */
export interface Check {
  readonly what: string;
  readonly value: string;
  readonly ok: boolean;
}

export interface ConcurrentReport {
  /** The sessions' figures, with the most live at once (submit accepted, `complete` not yet received). */
  readonly level: LevelResult & { readonly peakLive: number };
  readonly serviceCounters: Record<string, Record<string, number>>;
  readonly cpuMsByProcess: Record<string, number>;
  readonly machineBusyPct: number;
  readonly loadavg: { readonly start: string; readonly end: string };
  /** Peak RSS (VmHWM) and RSS at the end (VmRSS) per process, KiB. */
  readonly hwmKiB: Record<string, number | null>;
  readonly rssEndKiB: Record<string, number | null>;
  /** Σ VmHWM of the services and servers (the bench excluded), KiB. */
  readonly hwmTotalKiB: number;
  /** Σ VmRSS of services and servers just before the first submit, KiB. */
  readonly rssBaseKiB: number;
  /** (highest Σ VmRSS sampled − the base) ÷ the peak of live sessions, KiB; and Redis's share, bytes. */
  readonly perLiveSessionKiB: number;
  readonly redisPerLiveSessionBytes: number | null;
  readonly timeline: readonly Sample[];
  readonly checks: readonly Check[];
  /** Per process: its warn/error log lines, counted by message (most frequent first). */
  readonly logs: Record<string, ReadonlyArray<{ readonly msg: string; readonly n: number }>>;
  readonly ok: boolean;
}

/** Counts a process's JSON log lines at warn and above by message; other output counts as one message. */
export function logSummary(output: string): Array<{ msg: string; n: number }> {
  const counts = new Map<string, number>();
  for (const line of output.split("\n")) {
    if (!line.trim()) continue;
    let msg = line.slice(0, 120);
    try {
      const j = JSON.parse(line) as { level?: unknown; msg?: unknown };
      if (typeof j.level === "number" && j.level < 40) continue;
      if (typeof j.msg === "string") msg = j.msg;
    } catch {
      /* not a JSON line: counted as it is */
    }
    counts.set(msg, (counts.get(msg) ?? 0) + 1);
  }
  return [...counts].map(([msg, n]) => ({ msg, n })).sort((a, b) => b.n - a.n);
}

const BENCH = "bench (this process)";
const sum = (xs: Iterable<number | null>) => [...xs].reduce<number>((a, b) => a + (b ?? 0), 0);

async function redisUsedBytes(redis: Redis): Promise<number | null> {
  try {
    const m = /^used_memory:(\d+)/m.exec(await redis.info("memory"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Counters that must stay 0 under load, summed over every service (nested `inbox.redelivered` included). */
export function mustBeZero(counters: Record<string, Record<string, number>>): {
  redelivered: number;
  timersFired: number;
  casConflicts: number;
} {
  let redelivered = 0;
  for (const c of Object.values(counters))
    for (const [k, v] of Object.entries(c)) if (k === "redelivered" || k.endsWith(".redelivered")) redelivered += v;
  return {
    redelivered,
    timersFired: counters.coordinator?.timers_fired ?? 0,
    casConflicts: counters.coordinator?.conflicts ?? 0,
  };
}

/** Runs the sessions all at once and measures what they cost. */
export async function runConcurrent(o: ConcurrentOptions): Promise<ConcurrentReport> {
  const services = [...o.pids].filter(([k]) => k !== BENCH);
  const loadStart = loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
  const before = totalsByService(await serviceStats(o.nc, o.prefix));
  const cpuBefore = new Map([...o.pids].map(([k, pid]) => [k, cpuMs(pid)]));
  const machineBefore = machineCpu();
  const rssNow = () => sum(services.map(([, pid]) => rssKiB(pid)));
  const rssBaseKiB = rssNow();
  const redisBase = await redisUsedBytes(o.redis);

  const timeline: Sample[] = [];
  let live = 0;
  let done = 0;
  const t0 = performance.now();
  let sampling = false;
  let lastShownS = 0;
  const sample = async () => {
    if (sampling) return;
    sampling = true;
    try {
      const s: Sample = {
        atS: (performance.now() - t0) / 1000,
        live,
        done,
        rssKiB: rssNow(),
        redisUsedBytes: await redisUsedBytes(o.redis),
      };
      timeline.push(s);
      if (s.atS - lastShownS >= 10) {
        lastShownS = s.atS;
        o.log(
          `  ${s.atS.toFixed(0)} s: ${s.done}/${o.sessions} done, ${s.live} live, Σ RSS ${mib(s.rssKiB)} MiB, Redis ${s.redisUsedBytes === null ? "?" : (s.redisUsedBytes / 2 ** 20).toFixed(0)} MiB`,
        );
      }
    } finally {
      sampling = false;
    }
  };
  const sampler = setInterval(() => void sample(), 1000);
  let machineAfter = machineBefore;
  const cpuMsByProcess: Record<string, number> = {};
  let level: ConcurrentReport["level"];
  try {
    level = await runLevel({
      cluster: o.cluster,
      router: o.router,
      workload: o.workload,
      concurrency: o.sessions,
      sessions: o.sessions,
      firstIndex: 0,
      stem: o.stem,
      timeoutMs: o.timeoutMs,
      submitWindow: o.submitWindow,
      onLive: (n) => {
        live = n;
      },
      onProgress: (d) => {
        done = d;
      },
      onTimedEnd: () => {
        machineAfter = machineCpu();
        for (const [k, pid] of o.pids) {
          const a = cpuBefore.get(k);
          const b = cpuMs(pid);
          if (a != null && b != null) cpuMsByProcess[k] = b - a;
        }
      },
    });
  } finally {
    clearInterval(sampler);
  }
  await sample();
  const serviceCounters = diffTotals(before, totalsByService(await serviceStats(o.nc, o.prefix)));
  const hwm = Object.fromEntries([...o.pids].map(([k, pid]) => [k, hwmKiB(pid)]));
  const rssEnd = Object.fromEntries([...o.pids].map(([k, pid]) => [k, rssKiB(pid)]));
  const hwmTotalKiB = sum(services.map(([k]) => hwm[k] ?? null));
  const peakRss = Math.max(rssBaseKiB, ...timeline.map((s) => s.rssKiB));
  const peakRedis = Math.max(...timeline.map((s) => s.redisUsedBytes ?? 0));
  const zero = mustBeZero(serviceCounters);
  const missingHwm = services.filter(([k]) => hwm[k] == null).map(([k]) => k);
  const checks: Check[] = [
    {
      what: `every session completed and verified`,
      value: `${level.ok}/${level.sessions}`,
      ok: level.ok === o.sessions,
    },
    { what: `peak live sessions ≥ ${o.sessions}`, value: String(level.peakLive), ok: level.peakLive >= o.sessions },
    {
      what: `Σ peak RSS (VmHWM) of services + nats-server + redis-server < ${(o.rssBudgetKiB / 1024).toFixed(0)} MiB`,
      value: `${(hwmTotalKiB / 1024).toFixed(1)} MiB${missingHwm.length ? ` (not read: ${missingHwm.join(", ")})` : ""}`,
      ok: hwmTotalKiB < o.rssBudgetKiB && missingHwm.length === 0,
    },
    { what: "redeliveries (every service's redelivered)", value: String(zero.redelivered), ok: zero.redelivered === 0 },
    { what: "timers fired (coordinator timers_fired)", value: String(zero.timersFired), ok: zero.timersFired === 0 },
    { what: "CAS conflicts (coordinator conflicts)", value: String(zero.casConflicts), ok: zero.casConflicts === 0 },
  ];
  return {
    level,
    serviceCounters,
    cpuMsByProcess,
    machineBusyPct: busyPercent(machineBefore, machineAfter),
    loadavg: {
      start: loadStart,
      end: loadavg()
        .map((x) => x.toFixed(2))
        .join(" "),
    },
    hwmKiB: hwm,
    rssEndKiB: rssEnd,
    hwmTotalKiB,
    rssBaseKiB,
    perLiveSessionKiB: level.peakLive > 0 ? (peakRss - rssBaseKiB) / level.peakLive : Number.NaN,
    redisPerLiveSessionBytes:
      level.peakLive > 0 && redisBase !== null ? (peakRedis - redisBase) / level.peakLive : null,
    timeline,
    checks,
    logs: Object.fromEntries(
      o.cluster.procs.flatMap((p, i) => {
        const l = logSummary(p.output());
        return l.length > 0 ? [[`${p.name}#${i}`, l] as const] : [];
      }),
    ),
    ok: checks.every((c) => c.ok),
  };
}

const pad = (s: string, n: number) => s.padEnd(n);
const mib = (kib: number | null | undefined) => (kib == null ? "-" : (kib / 1024).toFixed(1));

/** The human-readable part of the report for this mode. */
export function renderConcurrent(r: ConcurrentReport, cores: number): string[] {
  const l = r.level;
  const own = Object.values(r.cpuMsByProcess).reduce((a, b) => a + b, 0);
  const out: string[] = [];
  out.push("", `Concurrent sessions (wall = submit → 'complete' event; ms)`);
  out.push(`  sessions ${l.sessions}, ok ${l.ok}, lost ${l.lost}, failed ${l.failed}; peak live ${l.peakLive}`);
  out.push(
    `  ${l.sessionsPerSecond.toFixed(1)} sessions/s over ${(l.elapsedMs / 1000).toFixed(1)} s; wall p50 ${ms(l.wallMs.p50)} p99 ${ms(l.wallMs.p99)} max ${ms(l.wallMs.max)}; submit p50 ${ms(l.submitMs.p50)} p99 ${ms(l.submitMs.p99)}`,
  );
  out.push(
    `  machine CPU busy ${r.machineBusyPct.toFixed(0)}% (this run's processes ${((100 * own) / (l.elapsedMs * cores)).toFixed(0)}%), load avg ${r.loadavg.start} → ${r.loadavg.end}`,
  );
  out.push("", "  process                 peak RSS (VmHWM) MiB   RSS at end MiB   CPU s");
  for (const k of Object.keys(r.hwmKiB)) {
    out.push(
      `  ${pad(k, 24)}${mib(r.hwmKiB[k]).padStart(20)}${mib(r.rssEndKiB[k]).padStart(17)}${(r.cpuMsByProcess[k] === undefined ? "-" : (r.cpuMsByProcess[k]! / 1000).toFixed(1)).padStart(8)}`,
    );
  }
  out.push(`  ${pad("Σ services and servers", 24)}${mib(r.hwmTotalKiB).padStart(20)}`);
  out.push(
    `  memory per live session: ${r.perLiveSessionKiB.toFixed(1)} KiB of RSS (highest Σ RSS sampled − ${mib(r.rssBaseKiB)} MiB before the first submit, ÷ peak live)` +
      (r.redisPerLiveSessionBytes === null
        ? ""
        : `; Redis used_memory ${(r.redisPerLiveSessionBytes / 1024).toFixed(1)} KiB of it`),
  );
  const hops = Object.entries(l.hopsMs);
  if (hops.length)
    out.push(
      "",
      "  where a session's time goes (gap between transitions, ms): " +
        hops.map(([k, s]) => `${k} p50 ${ms(s.p50)} p99 ${ms(s.p99)}`).join("; "),
    );
  out.push(
    "",
    "  timeline (s: live / done / Σ RSS MiB): " +
      thin(r.timeline, 12)
        .map((s) => `${s.atS.toFixed(0)}: ${s.live}/${s.done}/${mib(s.rssKiB)}`)
        .join(", "),
  );
  out.push(
    "",
    `  service counters: ${Object.entries(r.serviceCounters)
      .map(
        ([n, c]) =>
          `${n} ${
            Object.entries(c)
              .filter(([, v]) => v !== 0)
              .map(([k, v]) => `${k}=${v}`)
              .join(" ") || "-"
          }`,
      )
      .join("; ")}`,
  );
  const logs = Object.entries(r.logs);
  out.push("", `  service warnings and errors: ${logs.length === 0 ? "none" : ""}`);
  for (const [p, l] of logs)
    out.push(
      `    ${p}: ${l
        .slice(0, 4)
        .map((x) => `${x.n}× ${x.msg}`)
        .join("; ")}`,
    );
  out.push("", "Targets");
  for (const c of r.checks) out.push(`  ${c.ok ? "ok  " : "FAIL"}  ${c.what}: ${c.value}`);
  return out;
}

/** At most `n` samples spread over the run, the last one kept. */
function thin<T>(xs: readonly T[], n: number): T[] {
  if (xs.length <= n) return [...xs];
  const step = (xs.length - 1) / (n - 1);
  return Array.from({ length: n }, (_, i) => xs[Math.round(i * step)]!);
}

/** The JSON form: figures rounded, one compact row per session. */
export function concurrentJson(r: ConcurrentReport): unknown {
  const l = r.level;
  return {
    sessions: l.sessions,
    ok: l.ok,
    lost: l.lost,
    failed: l.failed,
    peakLive: l.peakLive,
    elapsedMs: round3(l.elapsedMs),
    sessionsPerSecond: round3(l.sessionsPerSecond),
    wallMs: roundSummary(l.wallMs),
    submitMs: roundSummary(l.submitMs),
    hopsMs: Object.fromEntries(Object.entries(l.hopsMs).map(([k, v]) => [k, roundSummary(v)])),
    serviceCounters: r.serviceCounters,
    cpuMsByProcess: r.cpuMsByProcess,
    machineBusyPct: round3(r.machineBusyPct),
    loadavg: r.loadavg,
    hwmKiB: r.hwmKiB,
    rssEndKiB: r.rssEndKiB,
    hwmTotalKiB: r.hwmTotalKiB,
    rssBaseKiB: r.rssBaseKiB,
    perLiveSessionKiB: round3(r.perLiveSessionKiB),
    redisPerLiveSessionBytes: r.redisPerLiveSessionBytes === null ? null : Math.round(r.redisPerLiveSessionBytes),
    timeline: r.timeline.map((s) => ({ ...s, atS: round3(s.atS) })),
    checks: r.checks,
    targetsMet: r.ok,
    logs: r.logs,
    problems: l.problems,
    sessionColumns: ["sessionId", "outcome", "wallMs", "submitMs"],
    sessionRows: l.results.map((s) => [
      s.sessionId,
      s.outcome,
      s.wallMs === null ? null : round3(s.wallMs),
      s.submitMs === null ? null : round3(s.submitMs),
    ]),
  };
}
