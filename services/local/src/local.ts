import { loadAgentConfig } from "@agentmesh/agent-kit";
import { loadRoles, startRoles } from "@agentmesh/agent";
import { connectRedis, redisHealth } from "@agentmesh/session-store";
import { connectNats, linkHealth } from "@agentmesh/messaging";
import { loadCoordinatorConfig, startCoordinatorFromConfig, type RunningCoordinator } from "@agentmesh/coordinator";
import {
  createHealth,
  createLogger,
  createTracing,
  runUntilSignalled,
  secretsOf,
  startProcessMetrics,
  type Health,
  type Logger,
  type Stoppable,
} from "@agentmesh/service-kit";

/**
 * Starts a coordinator and the named roles (every role of the registry when none is named) in
 * this process, on connections it opens. Each role is still its own NATS micro service with its
 * own durable consumer, exactly as when deployed one per pod; roles with tools (retriever,
 * executor) build them here too. One metrics registry and endpoint, and one tracer, serve them all;
 * with `health`, the endpoint's `/readyz` waits for the coordinator and every role.
 */
export async function startLocal(
  env: Record<string, string | undefined>,
  log: Logger,
  roleNames: readonly string[] = [],
  health?: Health,
): Promise<Stoppable & { coordinator: RunningCoordinator; metricsUrl: string | null }> {
  const ccfg = loadCoordinatorConfig(env);
  const acfg = loadAgentConfig(env);
  const roles = await loadRoles(roleNames);
  const nc = await connectNats({
    url: ccfg.natsUrl,
    ...ccfg.nats,
    name: `local-${process.pid}`,
    waitOnFirstConnect: false,
  });
  const redis = await connectRedis(ccfg.redisUrl, {
    name: `local-${process.pid}`,
    ...(ccfg.redisTlsCa === undefined ? {} : { tlsCaFile: ccfg.redisTlsCa }),
    ...(ccfg.redisSentinel === undefined ? {} : { sentinel: ccfg.redisSentinel }),
  });
  if (health) {
    health.requireLinks(linkHealth(nc), redisHealth(redis));
  }
  const served = await startProcessMetrics(ccfg.metrics, log, health);
  const metrics = served ? { metrics: served.metrics } : {};
  // one process, one service name: its spans still say which role or transition made them
  const tracing = await createTracing({ serviceName: "agentmesh-local", config: ccfg.tracing });
  const coordinator = await startCoordinatorFromConfig(ccfg, { nc, redis, log, tracing, ...metrics });
  const agents = await startRoles(roles, env, { nc, log, cfg: acfg, tracing, ...metrics });
  health?.require(coordinator.whyNotReady);
  health?.require(agents.whyNotReady);
  log.info({ llm: acfg.llm.baseURL ?? "offline engine" }, "coordinator and agents running");
  return {
    coordinator,
    metricsUrl: served?.server.url ?? null,
    async stop(graceMs: number) {
      await agents.stop(graceMs);
      await coordinator.stop(graceMs);
      await served?.server.close();
      await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
      await nc.drain();
      await redis.quit();
    },
  };
}

/** The local runner: a coordinator and every agent role in one process, until SIGTERM. */
export async function localMain(env: Record<string, string | undefined>): Promise<void> {
  const secrets = secretsOf(env);
  let log = createLogger({ service: "local", level: "info", secrets });
  const health = createHealth();
  await runUntilSignalled({
    name: "agentmesh-local",
    log,
    secrets,
    health,
    start: async () => {
      log = createLogger({ service: "local", level: loadCoordinatorConfig(env).logLevel, secrets });
      return startLocal(env, log, [], health);
    },
  });
}
