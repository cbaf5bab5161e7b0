import { loadAgentConfig } from "@agentmesh/agent-kit";
import { connectNats, linkHealth } from "@agentmesh/messaging";
import { redactUrls } from "@agentmesh/contracts";
import { createHealth, createLogger, createTracing, runUntilSignalled, secretsOf, startProcessMetrics } from "@agentmesh/service-kit";
import { loadRoles } from "./roles.js";
import { startRoles } from "./run.js";

// Wiring only: the roles named on the command line (or SERVICE) → config → ops endpoint (metrics
// and probes, up before NATS so a probe is answered while it waits) → NATS → run until SIGTERM.
const names = process.argv.slice(2).length ? process.argv.slice(2) : [process.env.SERVICE ?? ""].filter(Boolean);
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
    const roles = await loadRoles(names);
    log.info({ nats: redactUrls(cfg.natsUrl) }, "connecting (waits for NATS to come up)");
    const nc = await connectNats({ url: cfg.natsUrl, ...cfg.nats, name: `${service}-${process.pid}`, waitOnFirstConnect: true });
    health.requireLinks(linkHealth(nc));
    const tracing = await createTracing({ serviceName: service, config: cfg.tracing });
    const running = await startRoles(roles, process.env, { nc, log, cfg, tracing, ...(ops ? { metrics: ops.metrics } : {}) });
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
