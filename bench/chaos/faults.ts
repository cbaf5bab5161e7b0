// The fault steps of `pnpm bench:chaos`: each one breaks something, waits, mends it and returns
// once the system is whole again. A step is a plain value: the NATS cluster's steps and Redis's
// (a primary with replicas behind Sentinel) make one plan, and the run, the load and the report
// stay as they are.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Naming } from "@agentmesh/contracts";
import { replicasCurrent } from "@agentmesh/messaging";
import type { Cluster, Proc, ServiceName } from "../../test/e2e/harness.js";
import type { NatsCluster } from "../../test/setup/nats-cluster.js";
import type { RedisChaos } from "../../test/setup/redis-chaos.js";

/** What a fault step may touch. */
export interface FaultContext {
  /** The service processes (the e2e harness): `replace` restarts one of them. */
  readonly services: Cluster;
  /** The NATS cluster (null when the topology runs one server). */
  readonly nats: NatsCluster | null;
  /** Redis behind Sentinel with its faults (null when the topology runs one Redis server). */
  readonly redis: RedisChaos | null;
  /** A count that grows as sessions make progress (the sessions finished so far). */
  progress(): number;
  /** The run's own NATS connection (admin), to find where streams lead. */
  readonly nc: NatsConnection;
  readonly naming: Naming;
  /** SIGKILLs a service process and starts a new one of its kind; resolves once the new one answers `$SRV.PING`. */
  replace(p: Proc): Promise<Proc>;
  /** The running processes of one service. */
  running(name: ServiceName): Proc[];
  log(line: string): void;
}

/** One fault: a row of the report (`kind`) and this instance of it (`name`). */
export interface FaultStep {
  readonly kind: string;
  readonly name: string;
  /** Injects the fault, waits, heals it; resolves when everything broken was started again or healed. */
  run(ctx: FaultContext): Promise<void>;
}

/** Which node a step hits: a fixed one, or the one leading the task stream when the step starts (the worst one). */
export type NodePick = number | "tasks-leader";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function pickNode(ctx: FaultContext, pick: NodePick): Promise<number> {
  const nats = needCluster(ctx);
  if (typeof pick === "number") return pick;
  // right after a fault the stream may still be electing its leader, and the run's own connection
  // may be on a node that is catching up: ask again for a while. The harness never gives up on its
  // plan for this; it hits a fixed node instead, and says so.
  const until = Date.now() + 30_000;
  let last = "no leader named";
  while (Date.now() < until) {
    try {
      const jsm = await jetstreamManager(ctx.nc, { timeout: 5_000 });
      const info = await jsm.streams.info(ctx.naming.streams.tasks);
      const i = nats.nodes.findIndex((n) => n.name === info.cluster?.leader);
      if (i >= 0) return i;
    } catch (err) {
      last = (err as Error).message.split("\n")[0] ?? String(err);
    }
    await sleep(500);
  }
  ctx.log(`    no leader of the task stream found within 30 s (${last}); hitting n0`);
  return 0;
}

/**
 * Waits until every stream of the run (and the cancelled-sessions bucket) has a leader and every
 * follower current, for up to `ms`; returns how long that took, or null when it did not happen. A
 * node that came back may still be catching up when its step returns: a fault injected then would
 * be a second one on top of the first, more than three replicas promise to survive.
 */
export async function awaitReplicasCurrent(ctx: FaultContext, ms: number): Promise<number | null> {
  if (!ctx.nats) return 0;
  const replicas = ctx.nats.nodes.length;
  const streams = [...Object.values(ctx.naming.streams), `KV_${ctx.naming.kv.cancelled}`];
  const t0 = Date.now();
  for (;;) {
    const current = await (async () => {
      const jsm = await jetstreamManager(ctx.nc);
      for (const s of streams) if (!replicasCurrent((await jsm.streams.info(s)).cluster, replicas)) return false;
      return true;
    })().catch(() => false);
    if (current) return Date.now() - t0;
    if (Date.now() - t0 > ms) return null;
    await sleep(500);
  }
}

/**
 * The remedy when the cluster has not come whole a minute after a fault: each node in turn is
 * stopped (SIGTERM) and started again on its store, the next only once the cluster is healthy.
 * nats-server 2.9 can leave a stream's replicas stuck after a partition or a kill (it logs
 * "stream store EOF" and resets the stream's cluster state, and the group may stay without quorum
 * for minutes); a restart brings the node back through catch-up. An operator would do the same
 * (docs/nats-cluster.md); the run reports each time it had to.
 */
export async function rollingRestart(ctx: FaultContext): Promise<void> {
  const nats = needCluster(ctx);
  for (let i = 0; i < nats.nodes.length; i++) {
    ctx.log(`    restarting n${i}`);
    await nats.kill(i, "SIGTERM");
    await nats.start(i);
    await nats
      .waitHealthy(120_000)
      .catch((err: unknown) => ctx.log(`    (health: ${(err as Error).message.split("\n")[0]})`));
  }
}

function needCluster(ctx: FaultContext): NatsCluster {
  if (!ctx.nats) throw new Error("this fault needs the NATS cluster topology");
  return ctx.nats;
}

const nodeLabel = (pick: NodePick) => (pick === "tasks-leader" ? "the task stream's leader" : `node n${pick}`);

/** SIGKILL a NATS node, leave it down `downMs`, start it again on its store. */
export function natsKill(pick: NodePick, downMs: number): FaultStep {
  return {
    kind: "NATS node SIGKILL + restart",
    name: `SIGKILL ${nodeLabel(pick)}, down ${downMs / 1000} s`,
    async run(ctx) {
      const nats = needCluster(ctx);
      const i = await pickNode(ctx, pick);
      ctx.log(`    SIGKILL n${i}`);
      await nats.kill(i);
      await sleep(downMs);
      await nats.start(i);
      ctx.log(`    n${i} started again`);
      await nats
        .waitHealthy(120_000)
        .catch((err: unknown) => ctx.log(`    (health: ${(err as Error).message.split("\n")[0]})`));
    },
  };
}

/** SIGSTOP a NATS node for `ms` (longer than the heartbeats that notice it), then SIGCONT. */
export function natsPause(pick: NodePick, ms: number): FaultStep {
  return {
    kind: "NATS node SIGSTOP past the heartbeat",
    name: `SIGSTOP ${nodeLabel(pick)} for ${ms / 1000} s`,
    async run(ctx) {
      const nats = needCluster(ctx);
      const i = await pickNode(ctx, pick);
      ctx.log(`    SIGSTOP n${i}`);
      nats.pause(i);
      await sleep(ms);
      nats.resume(i);
      ctx.log(`    SIGCONT n${i}`);
    },
  };
}

/** Cut a NATS node off (its clients and its routes; the relay drops every byte) for `ms`, then heal. */
export function natsPartition(pick: NodePick, ms: number): FaultStep {
  return {
    kind: "NATS node partitioned (TCP relay) + healed",
    name: `partition ${nodeLabel(pick)} for ${ms / 1000} s`,
    async run(ctx) {
      const nats = needCluster(ctx);
      const i = await pickNode(ctx, pick);
      ctx.log(`    cut n${i} off`);
      nats.partition(i, "blackhole");
      await sleep(ms);
      nats.heal(i);
      ctx.log(`    n${i} healed`);
    },
  };
}

/**
 * SIGKILL a NATS node and, while it is down, a coordinator and an agent (of `agent`); the node
 * comes back after `downMs`, the two processes are replaced at once.
 */
export function killDuringNodeRestart(pick: NodePick, agent: ServiceName, downMs: number): FaultStep {
  return {
    kind: "coordinator + agent SIGKILL during a node's restart",
    name: `SIGKILL ${nodeLabel(pick)}, then a coordinator and the ${agent}`,
    async run(ctx) {
      const nats = needCluster(ctx);
      const i = await pickNode(ctx, pick);
      ctx.log(`    SIGKILL n${i}`);
      await nats.kill(i);
      await sleep(Math.min(1000, downMs / 3));
      const coordinator = ctx.running("coordinator")[0];
      const worker = ctx.running(agent)[0];
      if (!coordinator || !worker) throw new Error(`no running coordinator or ${agent} to kill`);
      ctx.log(`    SIGKILL coordinator pid ${coordinator.child.pid} and ${agent} pid ${worker.child.pid}`);
      const replaced = Promise.all([ctx.replace(coordinator), ctx.replace(worker)]);
      await sleep(downMs);
      await nats.start(i);
      ctx.log(`    n${i} started again`);
      await replaced;
      await nats
        .waitHealthy(120_000)
        .catch((err: unknown) => ctx.log(`    (health: ${(err as Error).message.split("\n")[0]})`));
    },
  };
}

/** The NATS cluster's fault plan: every node killed in turn (or only the task leader, `short`), a pause, a partition, a kill during a restart. */
export function natsClusterPlan(o: {
  short: boolean;
  nodes: number;
  pauseMs: number;
  partitionMs: number;
}): FaultStep[] {
  const downMs = 5000;
  const kills = o.short
    ? [natsKill("tasks-leader", downMs)]
    : Array.from({ length: o.nodes }, (_, i) => natsKill(i, downMs));
  return [
    ...kills,
    natsPause("tasks-leader", o.pauseMs),
    natsPartition("tasks-leader", o.partitionMs),
    killDuringNodeRestart("tasks-leader", "executor", downMs),
  ];
}

function needRedis(ctx: FaultContext): RedisChaos {
  if (!ctx.redis) throw new Error("this fault needs Redis behind Sentinel (--redis sentinel)");
  return ctx.redis;
}

/** SIGKILL the Redis primary; 0.3 s later, while the sentinels elect a replica, a coordinator is SIGKILLed and replaced. */
export function redisFailover(): FaultStep {
  return {
    kind: "Redis primary SIGKILL + failover, a coordinator killed during it",
    name: "SIGKILL the Redis primary, then a coordinator",
    async run(ctx) {
      const row = await needRedis(ctx).failover({
        async killCoordinator() {
          const coordinator = ctx.running("coordinator")[0];
          if (!coordinator) throw new Error("no running coordinator to kill");
          ctx.log(`    SIGKILL coordinator pid ${coordinator.child.pid}`);
          await ctx.replace(coordinator);
        },
        progress: () => ctx.progress(),
      });
      ctx.log(`    the sentinels promoted a replica after ${((row.promotedMs ?? 0) / 1000).toFixed(1)} s`);
    },
  };
}

/** The old Redis primary started again on its data as a replica of the promoted one; returns once it is in sync. */
export function redisRejoin(): FaultStep {
  return {
    kind: "old Redis primary rejoins as a replica",
    name: "restart the old Redis primary as a replica",
    async run(ctx) {
      const row = await needRedis(ctx).rejoin({ progress: () => ctx.progress() });
      ctx.log(`    in sync after ${((row.rejoinMs ?? 0) / 1000).toFixed(1)} s`);
    },
  };
}

/** Redis behind Sentinel's fault plan: a failover with a coordinator killed during it, then the old primary's rejoin. */
export function redisSentinelPlan(): FaultStep[] {
  return [redisFailover(), redisRejoin()];
}
