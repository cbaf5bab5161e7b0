// `pnpm bench --nats-cluster`: the runtime's levels on one nats-server with every stream at R1
// beside a 3-node cluster with every stream at R3 (NATS_URL naming every node), both with the
// generated access control, both up at once, in alternating rounds (R1 R3 in odd rounds, R3 R1 in
// even ones), so drift of the shared machine falls on both. Prints each figure of both and the
// ratio R3 / R1. See bench/README.md, "A NATS cluster at R3".
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname } from "node:path";
import { uniquePrefix } from "../test/setup/prefix.js";
import { startNatsCluster, type NatsCluster } from "../test/setup/nats-cluster.js";
import { Cluster, type ServiceName } from "../test/e2e/harness.js";
import type { BenchOptions } from "./args.js";
import { EventRouter } from "./events.js";
import { natsConnect } from "./nats.js";
import { runLevel, type LevelResult } from "./sessions.js";
import { median, summarize } from "./stats.js";
import { workloadFor } from "./workloads.js";

/** One NATS topology under test, with its own services, prefix and event subscription. */
interface Topology {
  readonly label: "R1 (1 node)" | "R3 (3 nodes)";
  readonly services: Cluster;
  router: EventRouter | null;
}

/** One level's figures on one topology, pooled over the rounds. */
export interface TopologyLevel {
  readonly sessions: number;
  readonly ok: number;
  /** Median over the rounds of verified sessions per second. */
  readonly sessionsPerSecond: number;
  /** Over every verified session of every round, ms. */
  readonly wallP50: number;
  readonly wallP99: number;
  /** Median over the rounds of the per-transition gap's p50, ms. */
  readonly transitionP50: number;
}

/** Pools the rounds of one level on one topology. */
export function poolTopology(rounds: readonly LevelResult[]): TopologyLevel {
  const walls = rounds.flatMap((r) => r.results.map((s) => s.wallMs).filter((w): w is number => w !== null));
  const wall = summarize(walls);
  return {
    sessions: rounds.reduce((a, r) => a + r.sessions, 0),
    ok: rounds.reduce((a, r) => a + r.ok, 0),
    sessionsPerSecond: median(rounds.map((r) => r.sessionsPerSecond)),
    wallP50: wall.p50,
    wallP99: wall.p99,
    transitionP50: median(rounds.map((r) => r.transitionMs.p50)),
  };
}

/** The table: per level, each figure on R1 and R3 and the ratio R3 / R1. */
export function renderTopologies(levels: ReadonlyArray<{ c: number; r1: TopologyLevel; r3: TopologyLevel }>): string[] {
  const ratio = (a: number, b: number) =>
    Number.isFinite(a) && Number.isFinite(b) && a > 0 ? `${(b / a).toFixed(2)}×` : "-";
  const row = (what: string, a: number, b: number, unit: string, digits = 1) =>
    `  ${what.padEnd(26)}${`${a.toFixed(digits)} ${unit}`.padStart(14)}${`${b.toFixed(digits)} ${unit}`.padStart(14)}${ratio(a, b).padStart(10)}`;
  return levels.flatMap(({ c, r1, r3 }) => [
    `c=${c}: ${r1.ok}/${r1.sessions} and ${r3.ok}/${r3.sessions} sessions verified${"R1 (1 node)".padStart(14)}${"R3 (3 nodes)".padStart(14)}${"R3 / R1".padStart(10)}`,
    row("throughput", r1.sessionsPerSecond, r3.sessionsPerSecond, "s/s"),
    row("session wall p50", r1.wallP50, r3.wallP50, "ms", 0),
    row("session wall p99", r1.wallP99, r3.wallP99, "ms", 0),
    row("transition gap p50", r1.transitionP50, r3.transitionP50, "ms", 2),
  ]);
}

export interface TopologyRunOptions {
  readonly opts: BenchOptions;
  readonly redisUrl: string;
  readonly extraEnv: Record<string, string>;
  readonly log: (s: string) => void;
  /** Registers a cleanup step (run last-registered first). */
  readonly cleanup: (what: string, run: () => Promise<unknown>) => void;
}

/** Runs the comparison; returns the exit code (1 when a session was lost or failed). */
export async function compareNatsTopologies(o: TopologyRunOptions): Promise<number> {
  const { opts, log } = o;
  const workload = workloadFor(opts.workflow);
  const clusterPrefix = uniquePrefix("benchc");
  const nats: NatsCluster = await startNatsCluster({ accessPrefix: clusterPrefix });
  o.cleanup("the NATS cluster", () => nats.stop());
  log(`bench --nats-cluster: 3 clustered nats-server nodes ${nats.url}; one nats-server of its own for R1`);
  const topologies: Topology[] = [
    {
      label: "R1 (1 node)",
      services: new Cluster({
        natsUrl: "",
        redisUrl: o.redisUrl,
        prefix: uniquePrefix("benchs"),
        extraEnv: { ...o.extraEnv, AGENTMESH_STREAM_REPLICAS: "1" },
        logLevel: "warn",
      }),
      router: null,
    },
    {
      label: "R3 (3 nodes)",
      services: new Cluster({
        natsUrl: nats.url,
        redisUrl: o.redisUrl,
        prefix: clusterPrefix,
        externalNats: nats,
        extraEnv: { ...o.extraEnv, AGENTMESH_STREAM_REPLICAS: "3" },
        logLevel: "warn",
      }),
      router: null,
    },
  ];
  for (const t of topologies) {
    await t.services.open();
    o.cleanup(`${t.label} services`, () => t.services.close());
    for (let i = 0; i < opts.coordinators; i++) t.services.start("coordinator");
    await t.services.waitReady({ coordinator: opts.coordinators }, 180_000);
    for (const r of workload.roles) t.services.start(r);
    const want: Partial<Record<ServiceName, number>> = { coordinator: opts.coordinators };
    for (const r of workload.roles) want[r] = 1;
    await t.services.waitReady(want, 180_000);
    const auth = t.services.authServer;
    const seedFile = auth ? auth.seedFile("admin") : nats.seedFile("admin");
    const nc = await natsConnect({ url: t.services.natsUrl, seedFile }, `bench-${t.label}`);
    o.cleanup(`${t.label} bench connection`, () => nc.close());
    t.router = new EventRouter(nc, t.services.naming);
    log(`bench: ${t.label}: ${opts.coordinators} coordinators and ${workload.roles.length} agents up`);
    if (opts.warmup > 0)
      await runLevel({
        cluster: t.services,
        router: t.router,
        workload,
        concurrency: Math.min(4, opts.warmup),
        sessions: opts.warmup,
        firstIndex: 100_000,
        stem: `${t.services.opts.prefix.slice(6)}-w`,
        timeoutMs: opts.sessionTimeoutMs,
      });
  }
  const results = new Map<string, LevelResult[]>();
  let firstIndex = 0;
  for (let round = 1; round <= opts.rounds; round++) {
    const order = round % 2 === 1 ? topologies : [...topologies].reverse();
    for (const t of order) {
      for (const c of opts.levels) {
        const n = opts.sessions.get(c)!;
        const r = await runLevel({
          cluster: t.services,
          router: t.router!,
          workload,
          concurrency: c,
          sessions: n,
          firstIndex,
          stem: `${t.services.opts.prefix.slice(6)}-r${round}c${c}`,
          timeoutMs: opts.sessionTimeoutMs,
        });
        firstIndex += n;
        const key = `${t.label}@${c}`;
        results.set(key, [...(results.get(key) ?? []), r]);
        log(
          `  round ${round} ${t.label} c=${c}: ${r.ok}/${r.sessions} verified, ${r.sessionsPerSecond.toFixed(1)} sessions/s, wall p50 ${r.wallMs.p50.toFixed(0)} ms`,
        );
      }
    }
  }
  const levels = opts.levels.map((c) => ({
    c,
    r1: poolTopology(results.get(`R1 (1 node)@${c}`) ?? []),
    r3: poolTopology(results.get(`R3 (3 nodes)@${c}`) ?? []),
  }));
  log("");
  log(
    `agentmesh bench --nats-cluster — ${workload.workflow} (${workload.path}); ${opts.rounds} rounds, ${cpus().length} CPUs, load avg ${loadavg()[0]!.toFixed(2)} at the end (shared machine)`,
  );
  for (const line of renderTopologies(levels)) log(line);
  const bad = [...results.values()].flat().reduce((a, r) => a + r.lost + r.failed, 0);
  for (const [key, rs] of results)
    for (const r of rs)
      for (const p of r.problems.slice(0, 5)) log(`  PROBLEM ${key} ${p.sessionId}: ${p.outcome} ${p.reason ?? ""}`);
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(
    opts.out,
    `${JSON.stringify({ mode: "nats-cluster", workflow: workload.workflow, rounds: opts.rounds, levels, lostOrFailed: bad, ok: bad === 0 }, null, 2)}\n`,
  );
  log(`bench: wrote ${opts.out}`);
  return bad === 0 ? 0 : 1;
}
