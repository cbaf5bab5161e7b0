import type { FloorLevel } from "./floor/floor.js";
import type { GatewayComparison, PathFigures } from "./gateway.js";
import type { LoadProbe, RoundTrips } from "./roundtrips.js";
import type { LevelResult } from "./sessions.js";
import { renderStartup, type StartupReport } from "./startup.js";
import { ms, roundSummary, round3, type Summary } from "./stats.js";
import { headlineJson, renderFloorCpu, renderHeadline, targetsLine, type Headline } from "./targets.js";

/** Everything measured at one concurrency level. */
export interface LevelReport {
  readonly level: LevelResult;
  readonly casConflicts: number;
  /** Per service: counter deltas over the level (coordinator: applied, conflicts, republished, …). */
  readonly serviceCounters: Record<string, Record<string, number>>;
  /** Share of both cores busy during the level, machine-wide (other users included). */
  readonly machineBusyPct: number;
  /** Context switches machine-wide during the level (every process and thread woken). */
  readonly ctxSwitches: number;
  /** CPU time each process used during the level, ms. */
  readonly cpuMsByProcess: Record<string, number>;
  readonly probe: LoadProbe;
}

export interface BenchReport {
  /** The workflow every session ran (`--workflow`), and the path its sessions take. */
  readonly workflow: string;
  readonly path: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly host: Record<string, unknown>;
  readonly infra: Record<string, unknown>;
  readonly settings: Record<string, unknown>;
  readonly roundTrips: RoundTrips;
  readonly warmup: { readonly sessions: number; readonly ok: number; readonly problems: LevelResult["problems"] };
  /** The runtime's levels, each pooled over the rounds (the rounds' own figures are in `headline`). */
  readonly levels: readonly LevelReport[];
  /** The runtime beside the floor: medians of the rounds, each round, and the targets. */
  readonly headline: Headline;
  /** The floor's levels of every round, and the steps each floor session took. */
  readonly floor: {
    readonly stepsPerSession: number;
    readonly levels: ReadonlyArray<FloorLevel & { readonly round: number }>;
  };
  /** The gateway comparison; null with --no-gateway. */
  readonly gateway: GatewayComparison | null;
  readonly rssKiB: Record<string, number | null>;
  readonly deadProcesses: readonly string[];
  /** Start-up timing (bench/startup.ts); null with --no-startup. */
  readonly startup: StartupReport | null;
  readonly summary: string;
  readonly ok: boolean;
}

/** CPU ms all processes of this run (services, servers, bench) used during a level. */
export function ownCpuMs(l: LevelReport): number {
  return Object.values(l.cpuMsByProcess).reduce((a, b) => a + b, 0);
}

/** This run's processes' CPU as a share of the whole machine during a level (100 = every core). */
export function ownSharePct(l: LevelReport, cores: number): number {
  return (100 * ownCpuMs(l)) / (l.level.elapsedMs * cores);
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s);

function table(head: string[], rows: string[][], leftCols = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (r: string[]) =>
    "  " + r.map((c, i) => (i < leftCols ? pad(c, widths[i]!) : lpad(c, widths[i]!))).join("  ");
  return [fmt(head), ...rows.map(fmt)].join("\n");
}

/** A signed difference in ms for the table and the summary. */
const delta = (a: number, b: number) =>
  Number.isFinite(a - b) ? `${a - b >= 0 ? "+" : "−"}${ms(Math.abs(a - b))}` : "-";

/** The one-line summary (also in the JSON). */
export function summaryLine(r: Omit<BenchReport, "summary" | "ok" | "finishedAt">): string {
  const parts = r.levels.map(
    ({ level: l, casConflicts }) =>
      `c=${l.concurrency}: ${l.sessionsPerSecond.toFixed(1)} sessions/s, overhead/step p50 ${ms(l.overheadPerStepMs.p50)} ms p99 ${ms(l.overheadPerStepMs.p99)} ms, ` +
      `${l.lost} lost ${l.failed} failed, ${casConflicts} CAS conflicts`,
  );
  const gw = r.gateway?.levels.map(
    (l) =>
      `c=${l.concurrency} ${delta(l.gateway.wallMs.p50, l.direct.wallMs.p50)} ms p50 ${delta(l.gateway.wallMs.p95, l.direct.wallMs.p95)} ms p95, first event p50 ${ms(l.gateway.firstEventMs.p50)} ms`,
  );
  const rt = r.roundTrips;
  return `bench ${r.workflow} (NATS access control ${r.infra.accessControl === true ? "on" : "off"}): ${parts.join(" | ")} | targets ${targetsLine(r.headline)} | ${gw ? `gateway added ${gw.join(", ")} | ` : ""}RTT p50 NATS req ${ms(rt.nats_request.p50)} ms, JS pub ${ms(rt.js_publish_ack.p50)} ms, Redis CAS ${ms(rt.redis_cas.p50)} ms`;
}

/** The human-readable report for stdout. */
export function renderReport(r: BenchReport): string {
  const out: string[] = [];
  out.push(
    "",
    `agentmesh bench — ${r.workflow} (${r.path}), offline engine (instant agents), every service its own OS process`,
  );
  out.push(
    `  access    NATS access control ${r.infra.accessControl === true ? "ON (own nats-server, generated config, one NKey user per service)" : "OFF (--open)"}`,
  );
  out.push(`  infra     ${String(r.infra.source)}: ${String(r.infra.nats)}; ${String(r.infra.redis)}`);
  out.push(
    `  settings  ${Object.entries(r.settings)
      .filter(([k]) => k !== "prefix")
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(" ")}`,
  );
  out.push(
    `  host      ${String(r.host.cpus)} CPUs, load avg ${String(r.host.loadavgStart)} at start, ${String(r.host.loadavgEnd)} at end (shared machine); git ${String(r.host.git)}`,
  );

  out.push("", ...renderHeadline(r.headline, r.floor.stepsPerSession));
  out.push("", ...renderFloorCpu(r.floor.levels));

  out.push("", "Round trips, idle, sequential (ms)");
  const rt: Array<[string, Summary]> = [
    ["NATS core request/reply (echo)", r.roundTrips.nats_request],
    ["JetStream publish → ack (file store)", r.roundTrips.js_publish_ack],
    ["Redis CAS: session store commit()", r.roundTrips.redis_cas],
    ["Redis session store load()", r.roundTrips.redis_load],
    ["Redis PING", r.roundTrips.redis_ping],
  ];
  out.push(
    table(
      ["round trip", "n", "p50", "p90", "p99", "max"],
      rt.map(([k, s]) => [k, String(s.n), ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max)]),
    ),
  );

  out.push("", `The runtime's sessions, all ${r.headline.rounds.length} rounds pooled`);
  out.push("", "Sessions (wall = submit → 'complete' event; overhead/step = (wall − Σ agent handler ms) / steps; ms)");
  out.push(
    table(
      [
        "c",
        "sessions",
        "ok",
        "lost",
        "failed",
        "sessions/s",
        "wall p50",
        "wall p99",
        "ovh/step p50",
        "ovh/step p99",
        "steps",
        "Σhandler",
        "CAS confl.",
      ],
      r.levels.map(({ level: l, casConflicts }) => [
        String(l.concurrency),
        String(l.sessions),
        String(l.ok),
        String(l.lost),
        String(l.failed),
        l.sessionsPerSecond.toFixed(1),
        ms(l.wallMs.p50),
        ms(l.wallMs.p99),
        ms(l.overheadPerStepMs.p50),
        ms(l.overheadPerStepMs.p99),
        ms(l.stepsPerSession.p50),
        ms(l.handlerMsTotal),
        String(casConflicts),
      ]),
      0,
    ),
  );

  out.push(
    "",
    "Where a session's time goes (ms): each step = gap between the bench's receipt of consecutive transitions' events (sub-ms);",
  );
  out.push("  the first and last rows compare the coordinators' clock (the events' at, whole ms) with the bench's");
  const hopKeys = [...new Set(r.levels.flatMap((l) => Object.keys(l.level.hopsMs)))];
  out.push(
    table(
      ["segment", ...r.levels.flatMap((l) => [`c=${l.level.concurrency} p50`, "p99"])],
      hopKeys.map((k) => [
        k,
        ...r.levels.flatMap((l) => {
          const s = l.level.hopsMs[k];
          return s ? [ms(s.p50), ms(s.p99)] : ["-", "-"];
        }),
      ]),
    ),
  );

  out.push("", "Round trips measured while the sessions ran (one NATS request + one CAS every 25 ms; ms)");
  const cores = Number(r.host.cpus) || 1;
  out.push(
    table(
      ["c", "NATS req p50", "p99", "Redis CAS p50", "p99", "machine CPU busy", "of it this run's processes"],
      r.levels.map((l) => [
        String(l.level.concurrency),
        ms(l.probe.nats_request.p50),
        ms(l.probe.nats_request.p99),
        ms(l.probe.redis_cas.p50),
        ms(l.probe.redis_cas.p99),
        `${l.machineBusyPct.toFixed(0)}%`,
        `${ownSharePct(l, cores).toFixed(0)}%`,
      ]),
      0,
    ),
  );

  out.push("", "CPU time per session by process (ms of CPU / verified session) and RSS at the end");
  const procs = Object.keys(r.rssKiB);
  out.push(
    table(
      ["process", ...r.levels.map((l) => `c=${l.level.concurrency}`), "RSS MiB"],
      procs
        .map((p) => [
          p,
          ...r.levels.map((l) => {
            const c = l.cpuMsByProcess[p];
            return c === undefined || l.level.ok === 0 ? "-" : (c / l.level.ok).toFixed(2);
          }),
          r.rssKiB[p] == null ? "-" : (r.rssKiB[p]! / 1024).toFixed(1),
        ])
        .concat([
          [
            "total",
            ...r.levels.map((l) => (l.level.ok === 0 ? "-" : (ownCpuMs(l) / l.level.ok).toFixed(2))),
            (Object.values(r.rssKiB).reduce<number>((a, b) => a + (b ?? 0), 0) / 1024).toFixed(1),
          ],
        ]),
    ),
  );

  out.push("", "Service counters over each level");
  for (const l of r.levels) {
    const parts = Object.entries(l.serviceCounters).map(
      ([name, c]) =>
        `${name} ${
          Object.entries(c)
            .filter(([, v]) => v !== 0)
            .map(([k, v]) => `${k}=${v}`)
            .join(" ") || "-"
        }`,
    );
    out.push(`  c=${l.level.concurrency}: ${parts.join("; ")}; duplicate events seen ${l.level.duplicateEvents}`);
  }

  if (r.gateway) out.push("", ...renderGateway(r.gateway));
  if (r.startup) out.push("", renderStartup(r.startup));

  const gatewayProblems = r.gateway
    ? [...r.gateway.warmup.problems, ...r.gateway.levels.flatMap((l) => [...l.direct.problems, ...l.gateway.problems])]
    : [];
  const problems = [...r.warmup.problems, ...r.levels.flatMap((l) => l.level.problems), ...gatewayProblems];
  const floorProblems = r.floor.levels.flatMap((l) =>
    l.problems.map((p) => `round ${l.round} c=${l.concurrency}: ${p}`),
  );
  if (problems.length || floorProblems.length || r.deadProcesses.length) {
    out.push("", "PROBLEMS");
    for (const p of problems) out.push(`  ${p.outcome.toUpperCase()} ${p.sessionId}: ${p.reason ?? ""}`);
    for (const p of floorProblems) out.push(`  FLOOR ${p}`);
    for (const d of r.deadProcesses) out.push(`  PROCESS EXITED during the run: ${d}`);
  }
  out.push("", r.summary, "");
  return out.join("\n");
}

/** The gateway comparison: both paths at each concurrency, and what the gateway adds. */
function renderGateway(g: GatewayComparison): string[] {
  const cpu = (f: PathFigures, p?: string) => {
    const v = p === undefined ? Object.values(f.cpuMsPerSession).reduce((a, b) => a + b, 0) : f.cpuMsPerSession[p];
    return v === undefined || !Number.isFinite(v) ? "-" : v.toFixed(2);
  };
  const row = (c: number, path: string, f: PathFigures) => [
    String(c),
    path,
    String(f.sessions),
    String(f.ok),
    String(f.lost + f.failed),
    f.sessionsPerSecond.toFixed(1),
    ms(f.acceptedMs.p50),
    ms(f.acceptedMs.p95),
    ms(f.firstEventMs.p50),
    ms(f.firstEventMs.p95),
    ms(f.wallMs.p50),
    ms(f.wallMs.p95),
    cpu(f),
    cpu(f, "gateway"),
  ];
  const rows = g.levels.flatMap((l) => [
    row(l.concurrency, "direct (NATS)", l.direct),
    row(l.concurrency, "gateway (SSE)", l.gateway),
    [
      String(l.concurrency),
      "added by the gateway",
      "",
      "",
      "",
      "",
      delta(l.gateway.acceptedMs.p50, l.direct.acceptedMs.p50),
      delta(l.gateway.acceptedMs.p95, l.direct.acceptedMs.p95),
      delta(l.gateway.firstEventMs.p50, l.direct.firstEventMs.p50),
      delta(l.gateway.firstEventMs.p95, l.direct.firstEventMs.p95),
      delta(l.gateway.wallMs.p50, l.direct.wallMs.p50),
      delta(l.gateway.wallMs.p95, l.direct.wallMs.p95),
      "",
      "",
    ],
  ]);
  return [
    "Gateway: the same sessions through POST /api/v1/query (SSE read to 'complete') and directly over NATS, interleaved rounds (ms)",
    "  accepted = submit reply (direct) / response headers (gateway); first event = the session's first event (gateway: first SSE event with an id);",
    "  complete = the 'complete' event; CPU = ms of CPU per verified session, all processes and the gateway's",
    table(
      [
        "c",
        "path",
        "sessions",
        "ok",
        "lost+failed",
        "sessions/s",
        "accepted p50",
        "p95",
        "first event p50",
        "p95",
        "complete p50",
        "p95",
        "CPU",
        "of it gateway",
      ],
      rows,
      2,
    ),
    ...g.levels.map(
      (l) =>
        `  c=${l.concurrency} rounds (sessions/s): ${l.rounds.map((r) => `${r.path === "direct" ? "D" : "G"} ${r.sessionsPerSecond.toFixed(1)}`).join(", ")}`,
    ),
    ...g.levels.map(
      (l) =>
        `  c=${l.concurrency}: the SSE stream delivered 'complete' ${ms(l.gateway.completeLagMs.p50)} ms (p50) / ${ms(l.gateway.completeLagMs.p95)} ms (p95) after the bench's core subscription to <prefix>.events.> got it`,
    ),
    `  gateway warm-up: ${g.warmup.sessions} sessions (not measured)`,
  ];
}

/** A path's figures for the JSON, with one row per session. */
function pathJson(f: PathFigures): unknown {
  return {
    sessions: f.sessions,
    ok: f.ok,
    lost: f.lost,
    failed: f.failed,
    sessionsPerSecond: round3(f.sessionsPerSecond),
    acceptedMs: roundSummary(f.acceptedMs),
    firstEventMs: roundSummary(f.firstEventMs),
    wallMs: roundSummary(f.wallMs),
    completeLagMs: roundSummary(f.completeLagMs),
    cpuMsPerSession: Object.fromEntries(Object.entries(f.cpuMsPerSession).map(([k, v]) => [k, round3(v)])),
    problems: f.problems,
    sessionColumns: ["sessionId", "outcome", "acceptedMs", "firstEventMs", "wallMs", "completeLagMs"],
    sessionRows: f.samples.map((s) => [
      s.sessionId,
      s.outcome,
      ...[s.acceptedMs, s.firstEventMs, s.wallMs, s.completeLagMs].map((x) => (x === null ? null : round3(x))),
    ]),
  };
}

/** The JSON file: summaries rounded to µs, plus one compact row per session. */
export function toJson(r: BenchReport): unknown {
  const rt = Object.fromEntries(Object.entries(r.roundTrips).map(([k, v]) => [k, roundSummary(v as Summary)]));
  return {
    ...r,
    roundTrips: rt,
    headline: headlineJson(r.headline),
    floor: {
      stepsPerSession: r.floor.stepsPerSession,
      levels: r.floor.levels.map((l) => ({
        ...l,
        elapsedMs: round3(l.elapsedMs),
        stepsPerSecond: round3(l.stepsPerSecond),
        stepMs: roundSummary(l.stepMs),
        cpuMsPerStep: round3(l.cpuMsPerStep),
        machineBusyPct: round3(l.machineBusyPct),
        ctxSwitchesPerStep: round3(l.ctxSwitchesPerStep),
      })),
    },
    levels: r.levels.map((l) => ({
      concurrency: l.level.concurrency,
      sessions: l.level.sessions,
      ok: l.level.ok,
      lost: l.level.lost,
      failed: l.level.failed,
      elapsedMs: round3(l.level.elapsedMs),
      sessionsPerSecond: round3(l.level.sessionsPerSecond),
      wallMs: roundSummary(l.level.wallMs),
      firstEventMs: roundSummary(l.level.firstEventMs),
      overheadPerStepMs: roundSummary(l.level.overheadPerStepMs),
      submitMs: roundSummary(l.level.submitMs),
      handlerMsTotal: round3(l.level.handlerMsTotal),
      stepsPerSession: roundSummary(l.level.stepsPerSession),
      eventsPerSession: roundSummary(l.level.eventsPerSession),
      duplicateEvents: l.level.duplicateEvents,
      hopsMs: Object.fromEntries(Object.entries(l.level.hopsMs).map(([k, v]) => [k, roundSummary(v)])),
      transitionMs: roundSummary(l.level.transitionMs),
      agentStepsPerSecond: round3(l.level.agentStepsPerSecond),
      casConflicts: l.casConflicts,
      serviceCounters: l.serviceCounters,
      machineBusyPct: round3(l.machineBusyPct),
      ctxSwitches: l.ctxSwitches,
      ownCpuSharePct: round3(ownSharePct(l, Number(r.host.cpus) || 1)),
      cpuMsPerSession: l.level.ok === 0 ? null : round3(ownCpuMs(l) / l.level.ok),
      cpuMsByProcess: l.cpuMsByProcess,
      probe: { nats_request: roundSummary(l.probe.nats_request), redis_cas: roundSummary(l.probe.redis_cas) },
      problems: l.level.problems,
      // one row per session: id, outcome, wall ms, overhead/step ms, submit ms, steps, Σ handler ms
      sessionColumns: ["sessionId", "outcome", "wallMs", "overheadPerStepMs", "submitMs", "steps", "handlerMs"],
      sessionRows: l.level.results.map((s) => [
        s.sessionId,
        s.outcome,
        s.wallMs === null ? null : round3(s.wallMs),
        s.overheadPerStepMs === null ? null : round3(s.overheadPerStepMs),
        s.submitMs === null ? null : round3(s.submitMs),
        s.steps,
        round3(s.handlerMs),
      ]),
    })),
    gateway: r.gateway && {
      warmup: r.gateway.warmup,
      levels: r.gateway.levels.map((l) => ({
        concurrency: l.concurrency,
        rounds: l.rounds.map((x) => ({ ...x, sessionsPerSecond: round3(x.sessionsPerSecond) })),
        direct: pathJson(l.direct),
        gateway: pathJson(l.gateway),
      })),
    },
  };
}
