import { loadAgentConfig } from "@agentmesh/agent-kit";
import { loadRoles, startRoles } from "@agentmesh/agent";
import { connectRedis } from "@agentmesh/session-store";
import { connectNats } from "@agentmesh/messaging";
import { loadCoordinatorConfig, startCoordinatorFromConfig } from "@agentmesh/coordinator";
import { createLogger, createTracing, runUntilSignalled, secretsOf } from "@agentmesh/service-kit";

/**
 * Runs a coordinator and every agent role of the registry in one process for local use. Each
 * role is still its own NATS micro service with its own durable consumer, exactly as when
 * deployed one per pod; roles with tools (retriever, executor) build them here too.
 */
export async function localMain(env: Record<string, string | undefined>): Promise<void> {
  const secrets = secretsOf(env);
  let log = createLogger({ service: "local", level: "info", secrets });
  await runUntilSignalled({
    name: "agentmesh-local",
    log,
    secrets,
    start: async () => {
      const ccfg = loadCoordinatorConfig(env);
      const acfg = loadAgentConfig(env);
      log = createLogger({ service: "local", level: ccfg.logLevel, secrets });
      const roles = await loadRoles([]);
      const nc = await connectNats({ url: ccfg.natsUrl, ...ccfg.nats, name: `local-${process.pid}`, waitOnFirstConnect: false });
      const redis = await connectRedis(ccfg.redisUrl, { name: `local-${process.pid}`, ...(ccfg.redisTlsCa === undefined ? {} : { tlsCaFile: ccfg.redisTlsCa }) });
      // one process, one service name: its spans still say which role or transition made them
      const tracing = createTracing({ serviceName: "agentmesh-local", config: ccfg.tracing });
      const coordinator = await startCoordinatorFromConfig(ccfg, { nc, redis, log, tracing });
      const agents = await startRoles(roles, env, { nc, log, cfg: acfg, tracing });
      log.info({ llm: acfg.llm.baseURL ?? "offline engine" }, "coordinator and agents running");
      return {
        async stop(graceMs: number) {
          await agents.stop(graceMs);
          await coordinator.stop(graceMs);
          await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
          await nc.drain();
          await redis.quit();
        },
      };
    },
  });
}
