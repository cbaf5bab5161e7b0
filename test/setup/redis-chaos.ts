import { startRedisTopology, type RedisNode, type RedisTopology } from "./redis-topology.js";

export const FAILOVER_FAULT = "primary SIGKILLed, a coordinator killed during the failover";
export const REJOIN_FAULT = "old primary restarted, rejoins as a replica";

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
  /** The primary SIGKILLed and, while the sentinels elect, a coordinator killed; resolves once work moves again. */
  failover(hooks: RedisChaosHooks): Promise<RedisFaultRow>;
  /** The old primary started again as a replica of the promoted one; resolves once it is in sync. */
  rejoin(hooks: Pick<RedisChaosHooks, "progress">): Promise<RedisFaultRow>;
  /** Both faults, in order, against the running load; resolves with one row per fault. */
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
    // the host is not used with sentinels (port 1: a service given no sentinels fails instead of
    // finding another Redis); the URL carries the login (none here)
    REDIS_URL: "redis://127.0.0.1:1",
    REDIS_SENTINELS: topology.sentinelsEnv,
    REDIS_SENTINEL_MASTER: topology.masterName,
    AGENTMESH_REDIS_WAIT_REPLICAS: String(opts.waitReplicas ?? 1),
    AGENTMESH_REDIS_WAIT_TIMEOUT_MS: "1000",
  });

  // the node the failover took the primary role from, until it rejoins
  let old: RedisNode | null = null;

  async function failover(hooks: RedisChaosHooks): Promise<RedisFaultRow> {
    // the primary SIGKILLed mid-load, and a coordinator killed while the sentinels elect
    const killed = await topology.primary();
    old = killed;
    const meter = stallMeter(hooks.progress);
    await topology.signal(killed, "SIGKILL");
    const killing = new Promise((r) => setTimeout(r, 300)).then(() => hooks.killCoordinator());
    // awaited below; until then a failed kill must not surface as an unhandled rejection
    killing.catch(() => undefined);
    const { ms: promotedMs } = await topology.awaitFailover(killed);
    await killing;
    // the row closes once work moves again after the promotion
    const moved = hooks.progress();
    const deadline = Date.now() + 60_000;
    while (hooks.progress() === moved && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return { fault: FAILOVER_FAULT, promotedMs, longestStallMs: meter.stop(), rejoinMs: null };
  }

  async function rejoin(hooks: Pick<RedisChaosHooks, "progress">): Promise<RedisFaultRow> {
    if (!old) throw new Error("no failover ran: there is no old primary to rejoin");
    const node = old;
    // it comes back as a replica of the promoted node, as a restarted pod of the charts does
    const meter = stallMeter(hooks.progress);
    const t0 = Date.now();
    await topology.restart(node, await topology.primary());
    await topology.awaitInSync(node, 60_000);
    old = null;
    return { fault: REJOIN_FAULT, promotedMs: null, longestStallMs: meter.stop(), rejoinMs: Date.now() - t0 };
  }

  async function run(hooks: RedisChaosHooks): Promise<RedisFaultRow[]> {
    return [await failover(hooks), await rejoin(hooks)];
  }

  return { topology, serviceEnv, failover, rejoin, run, stop: () => topology.stop() };
}
