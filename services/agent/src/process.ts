import { loadAgentConfig } from "@agentmesh/agent-kit";
import { connectNats, linkHealth } from "@agentmesh/messaging";
import { redactUrls } from "@agentmesh/contracts";
import {
  createHealth,
  createLogger,
  createTracing,
  runUntilSignalled,
  secretsOf,
  startProcessMetrics,
} from "@agentmesh/service-kit";
import { loadRoles, type BundledRoles } from "./roles.js";
import { startRoles } from "./run.js";

/** The roles an agent process runs: its command line's arguments, else `SERVICE`. */
export const agentRoleNames = (argv: readonly string[], env: NodeJS.ProcessEnv): string[] =>
  argv.length ? [...argv] : [env.SERVICE ?? ""].filter(Boolean);

/**
 * The agent process: the roles named on the command line (or SERVICE) → config → ops endpoint
 * (metrics and probes, up before NATS so a probe is answered while it waits) → NATS → run until
 * SIGTERM. `bundled` holds role modules a process bundle was built with (scripts/build-process.ts).
 */
export async function runAgentProcess(bundled: BundledRoles = {}): Promise<void> {
  const names = agentRoleNames(process.argv.slice(2), process.env);
  const service = names.join("+") || "agent";
  const secrets = secretsOf(process.env);
  let log = createLogger({ service, level: "info", secrets });
  const health = createHealth();
  await runUntilSignalled({
    name: service,
    log,
    secrets,
    health,
    start: async () => {
      if (names.length === 0) throw new Error("name the role(s) to run: agent <role> [<role>…] or SERVICE=<role>");
      const cfg = loadAgentConfig(process.env);
      log = createLogger({ service, level: cfg.logLevel, secrets });
      const ops = await startProcessMetrics(cfg.metrics, log, health);
      const roles = await loadRoles(names, bundled);
      log.info({ nats: redactUrls(cfg.natsUrl) }, "connecting (waits for NATS to come up)");
      const nc = await connectNats({
        url: cfg.natsUrl,
        ...cfg.nats,
        name: `${service}-${process.pid}`,
        waitOnFirstConnect: true,
      });
      health.requireLinks(linkHealth(nc));
      const tracing = await createTracing({ serviceName: service, config: cfg.tracing });
      const running = await startRoles(roles, process.env, {
        nc,
        log,
        cfg,
        tracing,
        ...(ops ? { metrics: ops.metrics } : {}),
      });
      health.require(running.whyNotReady);
      return {
        async stop(graceMs: number) {
          await running.stop(graceMs);
          await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
          await nc.drain();
          await ops?.server.close();
        },
      };
    },
  });
}
