// Two topologies side by side, both up at once, in alternating rounds (A B in odd rounds, B A in
// even ones), so drift of the shared machine falls on both; prints each figure of both and the
// ratio B / A:
// - `pnpm bench --nats-cluster`: one nats-server with every stream at R1 beside a 3-node cluster
//   with every stream at R3 (NATS_URL naming every node), both with the generated access control
//   (bench/README.md, "A NATS cluster at R3");
// - `pnpm bench --redis-replica`: one Redis server beside a primary with a replica whose every
//   commit waits for the replica (AGENTMESH_REDIS_WAIT_REPLICAS=1), both AOF with appendfsync
//   always (bench/README.md, "The replica wait").
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname } from "node:path";
import { uniquePrefix } from "../test/setup/prefix.js";
import { startNatsCluster, type NatsCluster } from "../test/setup/nats-cluster.js";
import { startRedisTopology } from "../test/setup/redis-topology.js";
import { Cluster, type ServiceName } from "../test/e2e/harness.js";
import type { BenchOptions } from "./args.js";
import { EventRouter } from "./events.js";
import { natsConnect } from "./nats.js";
import { runLevel, type LevelResult } from "./sessions.js";
import { median, summarize } from "./stats.js";
import { workloadFor } from "./workloads.js";

/** One topology under test, with its own services, prefix and event subscription. */
interface Topology {
  readonly label: string;
  readonly services: Cluster;
  /** The seed file of the unrestricted user the bench connects as. */
  readonly adminSeed: () => string;
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

/** One level of a comparison: the figures on topology A and on B. */
export interface ComparedLevel {
  readonly c: number;
  readonly a: TopologyLevel;
  readonly b: TopologyLevel;
}

/** The table: per level, each figure on A and B and the ratio B / A. */
export function renderTopologies(
  levels: readonly ComparedLevel[],
  labels: readonly [string, string] = NATS_LABELS,
): string[] {
  const ratio = (a: number, b: number) =>
    Number.isFinite(a) && Number.isFinite(b) && a > 0 ? `${(b / a).toFixed(2)}×` : "-";
  const [la, lb] = labels;
  const width = Math.max(14, la.length + 2, lb.length + 2);
  const row = (what: string, a: number, b: number, unit: string, digits = 1) =>
    `  ${what.padEnd(26)}${`${a.toFixed(digits)} ${unit}`.padStart(width)}${`${b.toFixed(digits)} ${unit}`.padStart(width)}${ratio(a, b).padStart(10)}`;
  return levels.flatMap(({ c, a: r1, b: r3 }) => [
    `c=${c}: ${r1.ok}/${r1.sessions} and ${r3.ok}/${r3.sessions} sessions verified${la.padStart(width)}${lb.padStart(width)}${"B / A".padStart(10)}`,
    row("throughput", r1.sessionsPerSecond, r3.sessionsPerSecond, "s/s"),
    row("session wall p50", r1.wallP50, r3.wallP50, "ms", 0),
    row("session wall p99", r1.wallP99, r3.wallP99, "ms", 0),
    row("transition gap p50", r1.transitionP50, r3.transitionP50, "ms", 2),
  ]);
}

const NATS_LABELS = ["R1 (1 node)", "R3 (3 nodes)"] as const;
const REDIS_LABELS = ["1 Redis node", "wait for a replica"] as const;

export interface TopologyRunOptions {
  readonly opts: BenchOptions;
  readonly redisUrl: string;
  readonly extraEnv: Record<string, string>;
  readonly log: (s: string) => void;
  /** Registers a cleanup step (run last-registered first). */
  readonly cleanup: (what: string, run: () => Promise<unknown>) => void;
}

/** The NATS comparison: one node at R1 beside three at R3; returns the exit code (1 when a session was lost or failed). */
export async function compareNatsTopologies(o: TopologyRunOptions): Promise<number> {
  const clusterPrefix = uniquePrefix("benchc");
  const nats: NatsCluster = await startNatsCluster({ accessPrefix: clusterPrefix });
  o.cleanup("the NATS cluster", () => nats.stop());
  o.log(`bench --nats-cluster: 3 clustered nats-server nodes ${nats.url}; one nats-server of its own for R1`);
  const one = ownNatsTopology(NATS_LABELS[0], o.redisUrl, "benchs", { ...o.extraEnv, AGENTMESH_STREAM_REPLICAS: "1" });
  const three = new Cluster({
    natsUrl: nats.url,
    redisUrl: o.redisUrl,
    prefix: clusterPrefix,
    externalNats: nats,
    extraEnv: { ...o.extraEnv, AGENTMESH_STREAM_REPLICAS: "3" },
    logLevel: "warn",
  });
  return compareTopologies(o, "nats-cluster", [
    one,
    { label: NATS_LABELS[1], services: three, adminSeed: () => nats.seedFile("admin"), router: null },
  ]);
}

/**
 * The replica wait's cost: one Redis node (today's default) beside a primary with one replica,
 * every commit waiting for it (`WAIT 1`); each on one nats-server of its own. Returns the exit code.
 */
export async function compareRedisTopologies(o: TopologyRunOptions): Promise<number> {
  const redis = await startRedisTopology({ replicas: 1, sentinels: 0 });
  o.cleanup("the Redis primary and replica", () => redis.stop());
  const primary = await redis.primary();
  o.log(`bench --redis-replica: a Redis primary and a replica (${redis.url(primary)}); ${o.redisUrl} for one node`);
  return compareTopologies(o, "redis-replica", [
    ownNatsTopology(REDIS_LABELS[0], o.redisUrl, "benchs", { ...o.extraEnv, AGENTMESH_REDIS_WAIT_REPLICAS: "0" }),
    ownNatsTopology(REDIS_LABELS[1], redis.url(primary), "benchr", {
      ...o.extraEnv,
      AGENTMESH_REDIS_WAIT_REPLICAS: "1",
    }),
  ]);
}

/** A topology whose services get a nats-server of their own (the harness's, with access control). */
function ownNatsTopology(label: string, redisUrl: string, stem: string, extraEnv: Record<string, string>): Topology {
  const services = new Cluster({ natsUrl: "", redisUrl, prefix: uniquePrefix(stem), extraEnv, logLevel: "warn" });
  return { label, services, adminSeed: () => services.authServer!.seedFile("admin"), router: null };
}

/** Starts both topologies' services, runs the levels in alternating rounds, prints and writes the comparison. */
async function compareTopologies(
  o: TopologyRunOptions,
  mode: "nats-cluster" | "redis-replica",
  topologies: readonly [Topology, Topology],
): Promise<number> {
  const { opts, log } = o;
  const workload = workloadFor(opts.workflow);
  for (const t of topologies) {
    await t.services.open();
    o.cleanup(`${t.label} services`, () => t.services.close());
    for (let i = 0; i < opts.coordinators; i++) t.services.start("coordinator");
    await t.services.waitReady({ coordinator: opts.coordinators }, 180_000);
    for (const r of workload.roles) t.services.start(r);
    const want: Partial<Record<ServiceName, number>> = { coordinator: opts.coordinators };
    for (const r of workload.roles) want[r] = 1;
    await t.services.waitReady(want, 180_000);
    const nc = await natsConnect({ url: t.services.natsUrl, seedFile: t.adminSeed() }, `bench-${t.label}`);
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
  const [ta, tb] = topologies;
  const levels: ComparedLevel[] = opts.levels.map((c) => ({
    c,
    a: poolTopology(results.get(`${ta.label}@${c}`) ?? []),
    b: poolTopology(results.get(`${tb.label}@${c}`) ?? []),
  }));
  log("");
  log(
    `agentmesh bench --${mode} — A: ${ta.label}, B: ${tb.label}; ${workload.workflow} (${workload.path}); ${opts.rounds} rounds, ${cpus().length} CPUs, load avg ${loadavg()[0]!.toFixed(2)} at the end (shared machine)`,
  );
  for (const line of renderTopologies(levels, [ta.label, tb.label])) log(line);
  const bad = [...results.values()].flat().reduce((a, r) => a + r.lost + r.failed, 0);
  for (const [key, rs] of results)
    for (const r of rs)
      for (const p of r.problems.slice(0, 5)) log(`  PROBLEM ${key} ${p.sessionId}: ${p.outcome} ${p.reason ?? ""}`);
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(
    opts.out,
    `${JSON.stringify({ mode, topologies: [ta.label, tb.label], workflow: workload.workflow, rounds: opts.rounds, levels, lostOrFailed: bad, ok: bad === 0 }, null, 2)}\n`,
  );
  log(`bench: wrote ${opts.out}`);
  return bad === 0 ? 0 : 1;
}
