import {
  loadAgentConfig,
  setUpRole,
  startAgentsInProcess,
  type AgentConfig,
  type AgentSetup,
} from "@agentmesh/agent-kit";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger, Metrics, Stoppable, Tracing } from "@agentmesh/service-kit";
import type { LoadedRole } from "./roles.js";

/**
 * Builds the loaded roles (their tools, from the environment) and starts them on one
 * connection; each is still its own NATS service and consumer. Closes what it built if
 * starting fails.
 */
export async function startRoles(
  roles: readonly LoadedRole[],
  env: Record<string, string | undefined>,
  deps: {
    nc: NatsConnection;
    log: Logger;
    cfg?: AgentConfig;
    tracing?: Tracing;
    /** A registry the process already serves (services/local); else the agents serve their own when configured. */ metrics?: Metrics;
  },
): Promise<
  Stoppable & {
    /** For `/readyz`: null while every role consumes, else the first that does not. */ whyNotReady(): string | null;
  }
> {
  const cfg = deps.cfg ?? loadAgentConfig(env);
  const setups: AgentSetup[] = [];
  const close = () => Promise.all(setups.map((s) => s.close?.()));
  try {
    for (const r of roles) setups.push(await setUpRole(r.module, env, deps.log));
    const running = await startAgentsInProcess(
      setups.flatMap((s) => s.agents),
      cfg,
      {
        nc: deps.nc,
        log: deps.log,
        promptDirs: roles.map((r) => r.dir),
        ...(deps.tracing ? { tracing: deps.tracing } : {}),
        ...(deps.metrics ? { metrics: deps.metrics } : {}),
      },
    );
    return {
      whyNotReady: () => running.whyNotReady(),
      async stop(graceMs: number) {
        await running.stop(graceMs);
        await close();
      },
    };
  } catch (err) {
    await close();
    throw err;
  }
}
