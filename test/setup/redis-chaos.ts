import { startRedisTopology, type RedisTopology } from "./redis-topology.js";

/**
 * The Redis part of a chaos run, to plug into a harness that runs load against real services: a
 * primary with replicas behind three sentinels; mid-load the primary is SIGKILLed (a failover),
 * a coordinator is killed while the sentinels are still electing, and the old primary comes back
 * as a replica. The harness gives the services `serviceEnv`, says how to kill a coordinator and
 * how much work is done so far; the module reports each fault with the longest stall it caused.
 */
export interface RedisChaosOptions {
  /** Replicas of the primary (default 2, so one can still confirm commits after a failover). */
  readonly replicas?: number;
  /** Replicas each commit waits for (default 1). */
  readonly waitReplicas?: number;
  /** The sentinels' down-after time (default 1000 ms). */
  readonly downAfterMs?: number;
}

/** What the harness lends the module while the faults run. */
export interface RedisChaosHooks {
  /** SIGKILLs one running coordinator (the harness starts its replacement as it always does). */
  killCoordinator(): Promise<void>;
  /** A counter that grows with the work done (e.g. transitions applied); sampled every 50 ms. */
  progress(): number;
}

/** One fault of the run and what it did. */
export interface RedisFaultRow {
  readonly fault: string;
  /** From the fault until the sentinels named a new primary (failover rows). */
  readonly promotedMs: number | null;
  /** The longest time without progress from the fault until the row was closed. */
  readonly longestStallMs: number;
  /** Until the old primary was an in-sync replica again (rejoin rows). */
  readonly rejoinMs: number | null;
}

export interface RedisChaos {
  readonly topology: RedisTopology;
  /** The environment every service gets: the sentinels, the login URL, the replica wait. */
  readonly serviceEnv: Readonly<Record<string, string>>;
  /** Runs the faults, in order, against the running load; resolves with one row per fault. */
  run(hooks: RedisChaosHooks): Promise<RedisFaultRow[]>;
  stop(): Promise<void>;
}

/** Samples `progress` every 50 ms and keeps the longest time it did not grow. */
function stallMeter(progress: () => number) {
  let last = progress();
  let since = Date.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = progress();
    if (now !== last) {
      last = now;
      since = Date.now();
    }
    longest = Math.max(longest, Date.now() - since);
  }, 50);
  return {
    stop(): number {
      clearInterval(timer);
      return Math.max(longest, Date.now() - since);
    },
  };
}

export async function startRedisChaos(opts: RedisChaosOptions = {}): Promise<RedisChaos> {
  const topology = await startRedisTopology({
    replicas: opts.replicas ?? 2,
    sentinels: 3,
    ...(opts.downAfterMs === undefined ? {} : { downAfterMs: opts.downAfterMs }),
  });
  const serviceEnv = Object.freeze({
    // the host is not used with sentinels; the URL carries the login (none here)
    REDIS_URL: "redis://127.0.0.1:6379",
    REDIS_SENTINELS: topology.sentinelsEnv,
    REDIS_SENTINEL_MASTER: topology.masterName,
    AGENTMESH_REDIS_WAIT_REPLICAS: String(opts.waitReplicas ?? 1),
    AGENTMESH_REDIS_WAIT_TIMEOUT_MS: "1000",
  });

  async function run(hooks: RedisChaosHooks): Promise<RedisFaultRow[]> {
    const rows: RedisFaultRow[] = [];
    // 1. the primary SIGKILLed mid-load; 2. a coordinator killed while the sentinels elect
    const old = await topology.primary();
    const failover = stallMeter(hooks.progress);
    await topology.signal(old, "SIGKILL");
    const killing = new Promise((r) => setTimeout(r, 300)).then(() => hooks.killCoordinator());
    const { ms: promotedMs } = await topology.awaitFailover(old);
    await killing;
    // the row closes once work moves again after the promotion
    const moved = hooks.progress();
    const deadline = Date.now() + 60_000;
    while (hooks.progress() === moved && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    rows.push({
      fault: "primary SIGKILLed, a coordinator killed during the failover",
      promotedMs,
      longestStallMs: failover.stop(),
      rejoinMs: null,
    });
    // 3. the old primary comes back and the sentinels make it a replica
    const rejoin = stallMeter(hooks.progress);
    const t0 = Date.now();
    await topology.restart(old);
    await topology.awaitInSync(old, 60_000);
    rows.push({
      fault: "old primary restarted, rejoins as a replica",
      promotedMs: null,
      longestStallMs: rejoin.stop(),
      rejoinMs: Date.now() - t0,
    });
    return rows;
  }

  return { topology, serviceEnv, run, stop: () => topology.stop() };
}
