import { naming as makeNaming, redactUrls } from "@agentmesh/contracts";
import { checkDurability, connectRedis, createRedisSessionStore, redisHealth } from "@agentmesh/session-store";
import { connectNats, linkHealth } from "@agentmesh/messaging";
import {
  createHealth,
  createLogger,
  crashHook,
  createTracing,
  runUntilSignalled,
  secretsOf,
  startProcessMetrics,
  type Logger,
  type Metrics,
  type Tracing,
} from "@agentmesh/service-kit";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import { loadCoordinatorConfig, type CoordinatorConfig } from "./config.js";
import { startCoordinator, type RunningCoordinator } from "./service.js";

/** Warns about a Redis that could lose sessions; in strict mode refuses to start. */
export async function assertDurable(redis: Redis, cfg: CoordinatorConfig, log: Logger): Promise<void> {
  const d = await checkDurability(redis);
  for (const w of d.warnings) log.warn({ durability: w }, "redis durability");
  if (cfg.requireDurable && (d.warnings.length > 0 || !d.configAvailable)) {
    throw new Error(
      `AGENTMESH_REQUIRE_DURABLE=1 but Redis at ${redactUrls(cfg.redisUrl)} is not durable: ${d.warnings.join("; ") || "CONFIG unavailable, cannot verify"}`,
    );
  }
}

/**
 * Starts a coordinator from configuration on existing connections (used by main and the local
 * runner). With `deps.metrics` (the local runner's one registry) it reports there; otherwise it
 * serves its own metrics when `cfg.metrics` says so, and closes them on stop.
 */
export async function startCoordinatorFromConfig(
  cfg: CoordinatorConfig,
  deps: { nc: NatsConnection; redis: Redis; log: Logger; tracing?: Tracing; metrics?: Metrics },
): Promise<RunningCoordinator & { metricsUrl: string | null }> {
  await assertDurable(deps.redis, cfg, deps.log);
  const own = deps.metrics ? null : await startProcessMetrics(cfg.metrics, deps.log);
  const metrics = deps.metrics ?? own?.metrics;
  const store = createRedisSessionStore(deps.redis, {
    keyPrefix: cfg.prefix,
    activeTtlMs: cfg.activeTtlMs,
    finishedTtlMs: cfg.finishedTtlMs,
    idempotencyTtlMs: cfg.activeTtlMs,
    longTermRefsMax: cfg.longTermRefs.max,
    longTermRefsTtlMs: cfg.longTermRefs.ttlMs,
    waitReplicas: cfg.redisWait.replicas,
    waitTimeoutMs: cfg.redisWait.timeoutMs,
  });
  const running = await startCoordinator({
    nc: deps.nc,
    store,
    naming: makeNaming(cfg.prefix),
    log: deps.log,
    defaults: cfg.defaults,
    concurrency: cfg.concurrency,
    taskAckWaitMs: cfg.taskAckWaitMs,
    inboxAckWaitMs: cfg.inboxAckWaitMs,
    taskMaxDeliver: cfg.taskMaxDeliver,
    cancelledTtlMs: cfg.cancelledTtlMs,
    streamReplicas: cfg.streamReplicas,
    crash: crashHook(cfg.crashAt, "coordinator", deps.log),
    storeReady: () => deps.redis.status === "ready",
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
    ...(metrics ? { metrics } : {}),
  }).catch(async (err: unknown) => {
    await own?.server.close();
    throw err;
  });
  return {
    ...running,
    metricsUrl: own?.server.url ?? null,
    async stop(graceMs: number) {
      await running.stop(graceMs);
      await own?.server.close();
    },
  };
}

/**
 * The coordinator process: config → its ops endpoint (metrics and probes, first, so a probe is
 * answered while it waits for NATS) → connections → service → run until SIGTERM.
 */
export async function coordinatorMain(env: Record<string, string | undefined>): Promise<void> {
  const secrets = secretsOf(env);
  let log = createLogger({ service: "coordinator", level: "info", secrets });
  const health = createHealth();
  await runUntilSignalled({
    name: "coordinator",
    log,
    secrets,
    health,
    start: async () => {
      const cfg = loadCoordinatorConfig(env);
      log = createLogger({ service: "coordinator", level: cfg.logLevel, secrets });
      const ops = await startProcessMetrics(cfg.metrics, log, health);
      log.info(
        { nats: redactUrls(cfg.natsUrl), redis: redactUrls(cfg.redisUrl) },
        "connecting (waits for NATS to come up)",
      );
      // both at once (each waits on its server): a failure of either ends the start, and the process
      // exits with it (runUntilSignalled), which drops the other connection too
      const [nc, redis] = await Promise.all([
        connectNats({ url: cfg.natsUrl, ...cfg.nats, name: `coordinator-${process.pid}`, waitOnFirstConnect: true }),
        connectRedis(cfg.redisUrl, {
          name: `coordinator-${process.pid}`,
          ...(cfg.redisTlsCa === undefined ? {} : { tlsCaFile: cfg.redisTlsCa }),
          ...(cfg.redisSentinel === undefined ? {} : { sentinel: cfg.redisSentinel }),
        }),
      ]);
      health.requireLinks(linkHealth(nc), redisHealth(redis));
      const tracing = await createTracing({ serviceName: "coordinator", config: cfg.tracing });
      const running = await startCoordinatorFromConfig(cfg, {
        nc,
        redis,
        log,
        tracing,
        ...(ops ? { metrics: ops.metrics } : {}),
      });
      health.require(running.whyNotReady);
      return {
        async stop(graceMs: number) {
          await running.stop(graceMs);
          await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
          await nc.drain();
          await redis.quit();
          await ops?.server.close();
        },
      };
    },
  });
}
