import { AgentmeshError, naming as makeNaming, type RoleName } from "@agentmesh/contracts";
import { createModelFromConfig, type ModelPort } from "@agentmesh/llm";
import {
  crashHook,
  startProcessMetrics,
  type Logger,
  type Metrics,
  type Stoppable,
  type Tracing,
} from "@agentmesh/service-kit";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AgentDefinition } from "./definition.js";
import type { AgentConfig } from "./config.js";
import { checkContracts, startAgent, type RunningAgent } from "./agent.js";
import { loadPromptContracts, type PromptContract } from "./prompts.js";
import { offlineHandlersOf } from "./offline.js";
import { createLangfusePromptSource } from "./prompt-source.js";

/** What an agent process runs: its roles, and what to close when it stops (tool workers, sandboxes). */
export interface AgentSetup {
  readonly agents: readonly AgentDefinition[];
  close?(): Promise<void>;
}

/** Roles whose ops need dependencies (tools, a corpus) build them from the environment at start. */
export type AgentSetupFactory = (
  env: Record<string, string | undefined>,
  log: Logger,
) => AgentSetup | Promise<AgentSetup>;

/**
 * What a role folder's `role.ts` exports by default: the role's definition, or (for a role whose
 * ops need tools or a corpus) a factory that builds its definition from the environment.
 */
export type RoleModule = AgentDefinition | { readonly role: RoleName; readonly setup: AgentSetupFactory };

/** A role whose definition is built at start-up from the environment (its tools, its corpus). */
export function defineRoleSetup(role: RoleName, setup: AgentSetupFactory): RoleModule {
  return { role, setup };
}

/** The definitions a role module provides in this environment, and what to close at stop. */
export async function setUpRole(
  mod: RoleModule,
  env: Record<string, string | undefined>,
  log: Logger,
): Promise<AgentSetup> {
  return "setup" in mod ? mod.setup(env, log) : { agents: [mod] };
}

/** Builds the model port from configuration: the OpenAI-compatible adapter, or the offline engine. */
function modelFrom(cfg: AgentConfig, defs: readonly AgentDefinition[]): ModelPort {
  return createModelFromConfig({
    offlineHandlers: offlineHandlersOf(defs),
    baseURL: cfg.llm.baseURL,
    apiKey: cfg.llm.apiKey,
    roles: cfg.llm.roles,
    defaultRole: cfg.llm.defaultRole,
    tiers: cfg.llm.tiers,
    timeoutMs: cfg.llm.timeoutMs,
    maxHttpAttempts: cfg.llm.maxHttpAttempts,
    prices: cfg.llm.prices,
    offlineLatencyMs: cfg.llm.offlineLatencyMs,
  });
}

/**
 * Agents may start before any coordinator has provisioned the streams (pods start in any
 * order): wait for the role's consumer to exist instead of exiting, saying why every 5 s.
 */
async function untilProvisioned<T>(log: Logger, role: string, start: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (!(err instanceof AgentmeshError && err.code === "unavailable")) throw err;
      if (attempt % 5 === 0)
        log.warn({ role, msg_detail: err.message }, "waiting for a coordinator to provision the streams");
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** The roles an agent process runs. */
export interface RunningAgents extends Stoppable {
  readonly agents: RunningAgent[];
  readonly metricsUrl: string | null;
  /** For `/readyz`: null while every role's consume loop runs (their `$SRV` services answer from start), else the first that does not. */
  whyNotReady(): string | null;
}

/** Starts the given roles on one connection; each is still its own NATS service and consumer. */
export async function startAgentsInProcess(
  defs: readonly AgentDefinition[],
  cfg: AgentConfig,
  deps: {
    nc: NatsConnection;
    log: Logger;
    model?: ModelPort;
    /** The loaded prompt files; by default read from `promptDirs` (the roles' folders) and the configured override folder. */
    prompts?: ReadonlyMap<string, PromptContract>;
    promptDirs?: readonly string[];
    /** Where task and model-call spans go (default off). */
    tracing?: Tracing;
    /**
     * The process's metrics registry when the process serves it (services/local shares one with
     * its coordinator); without one, a registry and its endpoint are started here when
     * `cfg.metrics` says so, and closed on stop.
     */
    metrics?: Metrics;
  },
): Promise<RunningAgents> {
  const wanted = cfg.roles.length ? defs.filter((d) => cfg.roles.includes(d.role)) : defs;
  const unknown = cfg.roles.filter((r) => !defs.some((d) => d.role === r));
  if (unknown.length) throw new Error(`AGENTMESH_ROLES names unknown roles: ${unknown.join(", ")}`);
  const model = deps.model ?? modelFrom(cfg, wanted);
  const crash = crashHook(cfg.crashAt, "agent", deps.log);
  const naming = makeNaming(cfg.prefix);
  const prompts =
    deps.prompts ?? loadPromptContracts({ builtinDirs: deps.promptDirs ?? [], overrideDir: cfg.promptsDir });
  // every role's contracts are checked before any role starts taking tasks
  for (const def of wanted) checkContracts(def, prompts);
  const promptSource = cfg.langfuse
    ? createLangfusePromptSource({ ...cfg.langfuse, log: deps.log.child({ component: "prompts" }) })
    : undefined;
  if (cfg.langfuse)
    deps.log.info(
      { langfuse: new URL(cfg.langfuse.host).origin, ttl_ms: cfg.langfuse.ttlMs },
      "prompts from Langfuse, the prompt files as the fallback",
    );
  deps.log.info({ model: model.name, roles: wanted.map((d) => d.role) }, "starting agents");
  const own = deps.metrics ? null : await startProcessMetrics(cfg.metrics, deps.log);
  const metrics = deps.metrics ?? own?.metrics;
  const agents: RunningAgent[] = [];
  try {
    for (const def of wanted) {
      agents.push(
        await untilProvisioned(deps.log, def.role, () =>
          startAgent(def, {
            nc: deps.nc,
            naming,
            model,
            log: deps.log,
            concurrency: cfg.concurrency,
            ackWaitMs: cfg.ackWaitMs,
            maxDeliver: cfg.maxDeliver,
            crash,
            logPayloads: cfg.logPayloads,
            rpc: cfg.rpc,
            prompts,
            ...(promptSource ? { promptSource } : {}),
            ...(deps.tracing ? { tracing: deps.tracing } : {}),
            ...(metrics ? { metrics } : {}),
          }),
        ),
      );
    }
  } catch (err) {
    await own?.server.close();
    throw err;
  }
  return {
    agents,
    metricsUrl: own?.server.url ?? null,
    whyNotReady: () => {
      const idle = agents.find((a) => !a.worker.alive());
      return idle ? `${idle.role}: consume loop not running` : null;
    },
    async stop(graceMs: number) {
      await Promise.all(agents.map((a) => a.stop(graceMs)));
      await own?.server.close();
    },
  };
}
