import {
  METRICS_VARS,
  NATS_ACCESS_VARS,
  TRACING_VARS,
  metricsSettings,
  natsAccess,
  parseEnv,
  parsePrices,
  parseRoleModels,
  configError,
  tracingConfig,
  type MetricsSettings,
  type NatsAccess,
  type TracingConfig,
} from "@agentmesh/service-kit";
import type { RoleModelConfig } from "@agentmesh/llm";

const NAMES = [
  "NATS_URL",
  "AGENTMESH_PREFIX",
  "LOG_LEVEL",
  "AGENTMESH_LOG_PAYLOADS",
  "AGENTMESH_CRASH_AT",
  "AGENTMESH_LLM_BASE_URL",
  "AGENTMESH_LLM_API_KEY",
  "AGENTMESH_LLM_MODEL",
  "AGENTMESH_FAST_MODEL",
  "AGENTMESH_ROLE_MODELS",
  "AGENTMESH_LLM_PRICES",
  "AGENTMESH_LLM_TIMEOUT_MS",
  "AGENTMESH_LLM_MAX_ATTEMPTS",
  "AGENTMESH_AGENT_CONCURRENCY",
  "AGENTMESH_ROLES",
  "AGENTMESH_TASK_ACK_WAIT_MS",
  "AGENTMESH_TASK_MAX_DELIVER",
  "AGENTMESH_PROMPTS_DIR",
  "AGENTMESH_RPC",
  "AGENTMESH_PROMPT_CACHE_TTL_MS",
  "AGENTMESH_PROMPT_FETCH_TIMEOUT_MS",
  "AGENTMESH_OFFLINE_LATENCY_MS",
  "AGENTMESH_ZOD_COMPILE",
  ...NATS_ACCESS_VARS,
  ...TRACING_VARS,
  ...METRICS_VARS,
] as const;

/** Everything an agent process needs, parsed once at start-up and frozen. */
export interface AgentConfig {
  readonly natsUrl: string;
  /** NKey seed file and TLS files for the NATS connection. */
  readonly nats: NatsAccess;
  /** Serve direct `rpc` endpoints (debugging only). */
  readonly rpc: boolean;
  readonly prefix: string;
  readonly logLevel: string;
  readonly logPayloads: boolean;
  readonly crashAt: string | undefined;
  readonly llm: {
    readonly baseURL: string | undefined;
    readonly apiKey: string | undefined;
    readonly defaultRole: RoleModelConfig;
    /** The fast tier: what ops asking for it (router.route) use unless `roles` names their role or op. */
    readonly tiers: { readonly fast: RoleModelConfig };
    readonly roles: Record<string, RoleModelConfig>;
    readonly prices: Record<string, { input_per_mtok: number; output_per_mtok: number }>;
    readonly timeoutMs: number;
    readonly maxHttpAttempts: number;
    /** Tests and benches: how long each offline-engine answer takes (0 = at once). */
    readonly offlineLatencyMs: number;
  };
  readonly concurrency: number;
  readonly roles: readonly string[];
  readonly ackWaitMs: number;
  readonly maxDeliver: number;
  /** Folder of prompt-contract overrides; each replaces the built-in contract of the same id. */
  readonly promptsDir: string | undefined;
  /** Langfuse to take prompts from by name (the prompt files the fallback); null = the files only. */
  readonly langfuse: {
    readonly host: string;
    readonly publicKey: string;
    readonly secretKey: string;
    readonly ttlMs: number;
    readonly timeoutMs: number;
  } | null;
  /** Where task and model-call spans go (none = off). */
  readonly tracing: TracingConfig;
  /** Where the process serves its metrics; null = it keeps none. */
  readonly metrics: MetricsSettings | null;
}

/** Reads the agent configuration from an environment, listing every problem at once. */
export function loadAgentConfig(env: Record<string, string | undefined>): AgentConfig {
  const e = parseEnv(NAMES, env);
  const defaultRole: RoleModelConfig = { model: e.AGENTMESH_LLM_MODEL, temperature: 0.2, tier: "standard" };
  const fast: RoleModelConfig = {
    model: e.AGENTMESH_FAST_MODEL ?? e.AGENTMESH_LLM_MODEL,
    temperature: defaultRole.temperature,
    tier: "fast",
  };
  let roles: Record<string, RoleModelConfig>;
  let prices: AgentConfig["llm"]["prices"];
  const problems: string[] = [];
  try {
    roles = parseRoleModels(e.AGENTMESH_ROLE_MODELS, defaultRole);
  } catch (err) {
    problems.push((err as Error).message);
    roles = {};
  }
  try {
    prices = parsePrices(e.AGENTMESH_LLM_PRICES);
  } catch (err) {
    problems.push((err as Error).message);
    prices = {};
  }
  const tracing = tracingConfig(e, problems);
  if (problems.length) throw configError(problems);
  const langfuse =
    e.LANGFUSE_HOST && e.LANGFUSE_PUBLIC_KEY && e.LANGFUSE_SECRET_KEY
      ? {
          host: e.LANGFUSE_HOST,
          publicKey: e.LANGFUSE_PUBLIC_KEY,
          secretKey: e.LANGFUSE_SECRET_KEY,
          ttlMs: e.AGENTMESH_PROMPT_CACHE_TTL_MS,
          timeoutMs: e.AGENTMESH_PROMPT_FETCH_TIMEOUT_MS,
        }
      : null;
  return Object.freeze({
    natsUrl: e.NATS_URL,
    nats: natsAccess(e),
    rpc: e.AGENTMESH_RPC,
    prefix: e.AGENTMESH_PREFIX,
    logLevel: e.LOG_LEVEL,
    logPayloads: e.AGENTMESH_LOG_PAYLOADS,
    crashAt: e.AGENTMESH_CRASH_AT,
    llm: {
      baseURL: e.AGENTMESH_LLM_BASE_URL,
      apiKey: e.AGENTMESH_LLM_API_KEY,
      defaultRole,
      tiers: { fast },
      roles,
      prices,
      timeoutMs: e.AGENTMESH_LLM_TIMEOUT_MS,
      maxHttpAttempts: e.AGENTMESH_LLM_MAX_ATTEMPTS,
      offlineLatencyMs: e.AGENTMESH_OFFLINE_LATENCY_MS,
    },
    concurrency: e.AGENTMESH_AGENT_CONCURRENCY,
    roles: e.AGENTMESH_ROLES.split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    ackWaitMs: e.AGENTMESH_TASK_ACK_WAIT_MS,
    maxDeliver: e.AGENTMESH_TASK_MAX_DELIVER,
    promptsDir: e.AGENTMESH_PROMPTS_DIR,
    langfuse,
    tracing,
    metrics: metricsSettings(e),
  });
}
