import { loadAgentConfig } from "@agentmesh/agent-kit";
import { connectNats } from "@agentmesh/messaging";
import { redactUrls } from "@agentmesh/contracts";
import { createLogger, createTracing, runUntilSignalled, secretsOf } from "@agentmesh/service-kit";
import { loadRoles } from "./roles.js";
import { startRoles } from "./run.js";

// Wiring only: the roles named on the command line (or SERVICE) → config → NATS → run until SIGTERM.
const names = process.argv.slice(2).length ? process.argv.slice(2) : [process.env.SERVICE ?? ""].filter(Boolean);
const service = names.join("+") || "agent";
const secrets = secretsOf(process.env);
let log = createLogger({ service, level: "info", secrets });
await runUntilSignalled({
  name: service,
  log,
  secrets,
  start: async () => {
    if (names.length === 0) throw new Error("name the role(s) to run: agent <role> [<role>…] or SERVICE=<role>");
    const cfg = loadAgentConfig(process.env);
    log = createLogger({ service, level: cfg.logLevel, secrets });
    const roles = await loadRoles(names);
    log.info({ nats: redactUrls(cfg.natsUrl) }, "connecting (waits for NATS to come up)");
    const nc = await connectNats({ url: cfg.natsUrl, ...cfg.nats, name: `${service}-${process.pid}`, waitOnFirstConnect: true });
    const tracing = await createTracing({ serviceName: service, config: cfg.tracing });
    const running = await startRoles(roles, process.env, { nc, log, cfg, tracing });
    return {
      async stop(graceMs: number) {
        await running.stop(graceMs);
        await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
        await nc.drain();
      },
    };
  },
});
