import {
  Capability,
  DomainHints,
  formatZodError,
  type CriticChainSettings,
  type HaloSettings,
  type SupervisorSettings,
} from "@agentmesh/contracts";
import {
  CONNECTION_VARS,
  METRICS_VARS,
  TRACING_VARS,
  configError,
  connectionConfig,
  metricsSettings,
  parseEnv,
  tracingConfig,
  type MetricsSettings,
  type NatsAccess,
  type RedisSentinelSettings,
  type TracingConfig,
} from "@agentmesh/service-kit";
import {
  MINIMAL_CRITIC_CHAIN_SETTINGS,
  MINIMAL_SUPERVISOR_SETTINGS,
  SUPERVISOR_TOOLS,
  type RuntimeDefaults,
} from "@agentmesh/workflows";

const NAMES = [
  ...CONNECTION_VARS,
  "LOG_LEVEL",
  "AGENTMESH_CRASH_AT",
  "AGENTMESH_TASK_ACK_WAIT_MS",
  "AGENTMESH_INBOX_ACK_WAIT_MS",
  "AGENTMESH_TASK_MAX_DELIVER",
  "AGENTMESH_TASK_DEADLINE_MS",
  "AGENTMESH_SESSION_DEADLINE_MS",
  "AGENTMESH_PAUSE_TIMEOUT_MS",
  "AGENTMESH_MAX_STEPS",
  "AGENTMESH_MAX_TOOL_CALLS_PER_SESSION",
  "AGENTMESH_MAX_TOKENS",
  "AGENTMESH_MAX_COST_USD",
  "AGENTMESH_MAX_WALL_MS",
  "AGENTMESH_COORDINATOR_CONCURRENCY",
  "AGENTMESH_MAX_STEPS_CEILING",
  "AGENTMESH_MAX_TOKENS_CEILING",
  "AGENTMESH_MAX_COST_USD_CEILING",
  "AGENTMESH_MAX_WALL_MS_CEILING",
  "AGENTMESH_SESSION_TTL_MS",
  "AGENTMESH_FINISHED_TTL_MS",
  "AGENTMESH_LONG_TERM_REFS_MAX",
  "AGENTMESH_LONG_TERM_REFS_TTL_MS",
  "AGENTMESH_REQUIRE_DURABLE",
  "AGENTMESH_REDIS_WAIT_REPLICAS",
  "AGENTMESH_REDIS_WAIT_TIMEOUT_MS",
  "AGENTMESH_CANCELLED_TTL_MS",
  "AGENTMESH_STREAM_REPLICAS",
  "AGENTMESH_ZOD_COMPILE",
  "AGENTMESH_HALO_CAPABILITIES",
  "AGENTMESH_HALO_JOIN_DEADLINE_MS",
  "AGENTMESH_HALO_DOMAIN_HINTS",
  "AGENTMESH_WEB_SEARCH_KEY",
  "AGENTMESH_MCP_SERVERS",
  "AGENTMESH_SUPERVISOR_TOOLS",
  "AGENTMESH_IMAGES_BASE_URL",
  "AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS",
  "AGENTMESH_CLARIFY_MAX_CLARIFICATIONS",
  "AGENTMESH_CLARIFY_MAX_HISTORY",
  ...TRACING_VARS,
  ...METRICS_VARS,
] as const;

/** The MCP capabilities of halo: each is served when a configured MCP server has its name. */
const MCP_CAPABILITIES = ["biomcp", "llama_mcp"] as const satisfies readonly Capability[];

/** JSON of `text`, or a problem naming the setting. */
function parseJson(text: string, setting: string, problems: string[]): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    problems.push(`${setting}: not valid JSON (${(err as Error).message})`);
    return undefined;
  }
}

/**
 * What halo may plan with here: the list in AGENTMESH_HALO_CAPABILITIES, or else graph, rag and
 * chitchat (both data specialists ship with sample data), web when a web search key is set, and
 * each MCP capability a configured server is named after. chitchat is always servable.
 */
function haloCapabilities(
  e: {
    AGENTMESH_HALO_CAPABILITIES: string;
    AGENTMESH_WEB_SEARCH_KEY: string | undefined;
    AGENTMESH_MCP_SERVERS: string;
  },
  problems: string[],
): Capability[] {
  const listed = e.AGENTMESH_HALO_CAPABILITIES.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (listed.length > 0) {
    const unknown = listed.filter((t) => !Capability.safeParse(t).success);
    if (unknown.length > 0)
      problems.push(
        `AGENTMESH_HALO_CAPABILITIES: unknown capability ${unknown.map((t) => `"${t}"`).join(", ")} (known: ${Capability.options.join(", ")})`,
      );
    return Capability.options.filter((c) => c === "chitchat" || listed.includes(c));
  }
  const servers =
    e.AGENTMESH_MCP_SERVERS.trim() === "" ? {} : parseJson(e.AGENTMESH_MCP_SERVERS, "AGENTMESH_MCP_SERVERS", problems);
  const named = servers !== null && typeof servers === "object" && !Array.isArray(servers) ? Object.keys(servers) : [];
  const served = new Set<Capability>([
    "graph",
    "rag",
    "chitchat",
    ...MCP_CAPABILITIES.filter((c) => named.includes(c)),
  ]);
  if (e.AGENTMESH_WEB_SEARCH_KEY) served.add("web");
  return Capability.options.filter((c) => served.has(c));
}

/** halo's settings from the environment; problems are added to `problems`. */
function haloSettings(
  e: Parameters<typeof haloCapabilities>[0] & {
    AGENTMESH_HALO_JOIN_DEADLINE_MS: number;
    AGENTMESH_HALO_DOMAIN_HINTS: string;
  },
  problems: string[],
): HaloSettings {
  const available = haloCapabilities(e, problems);
  let domainHints: DomainHints | null = null;
  if (e.AGENTMESH_HALO_DOMAIN_HINTS.trim() !== "") {
    const parsed = DomainHints.safeParse(
      parseJson(e.AGENTMESH_HALO_DOMAIN_HINTS, "AGENTMESH_HALO_DOMAIN_HINTS", problems),
    );
    if (parsed.success) domainHints = parsed.data;
    else if (problems.every((p) => !p.startsWith("AGENTMESH_HALO_DOMAIN_HINTS")))
      problems.push(`AGENTMESH_HALO_DOMAIN_HINTS: ${formatZodError(parsed.error, 400)}`);
  }
  return {
    available_capabilities: available,
    join_deadline_ms: e.AGENTMESH_HALO_JOIN_DEADLINE_MS,
    domain_hints: domainHints,
  };
}

/**
 * What the supervisor's agents may call here: the list in AGENTMESH_SUPERVISOR_TOOLS, or else the
 * corpus and the sandbox (always served), web_search when a web search key is set, and both image
 * tools when an images endpoint is.
 */
function supervisorSettings(
  e: {
    AGENTMESH_SUPERVISOR_TOOLS: string;
    AGENTMESH_WEB_SEARCH_KEY: string | undefined;
    AGENTMESH_IMAGES_BASE_URL: string | undefined;
  },
  problems: string[],
): SupervisorSettings {
  const listed = e.AGENTMESH_SUPERVISOR_TOOLS.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (listed.length > 0) {
    const unknown = listed.filter((t) => !(SUPERVISOR_TOOLS as readonly string[]).includes(t));
    if (unknown.length > 0)
      problems.push(
        `AGENTMESH_SUPERVISOR_TOOLS: unknown tool ${unknown.map((t) => `"${t}"`).join(", ")} (known: ${SUPERVISOR_TOOLS.join(", ")})`,
      );
    return { tools: SUPERVISOR_TOOLS.filter((t) => listed.includes(t)) };
  }
  const served = new Set<string>(MINIMAL_SUPERVISOR_SETTINGS.tools);
  if (e.AGENTMESH_WEB_SEARCH_KEY) served.add("web_search");
  if (e.AGENTMESH_IMAGES_BASE_URL) ["generate_image", "analyze_image"].forEach((t) => served.add(t));
  return { tools: SUPERVISOR_TOOLS.filter((t) => served.has(t)) };
}

/**
 * What critic-chain's researcher and expert may call here: the calculator, the corpus and the
 * sandbox (always served), web_search when a web search key is set; each agent is offered those of
 * its own grants. Their tool rounds per turn from AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS.
 */
function criticChainSettings(e: {
  AGENTMESH_WEB_SEARCH_KEY: string | undefined;
  AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS: number;
}): CriticChainSettings {
  const tools = [...MINIMAL_CRITIC_CHAIN_SETTINGS.tools, ...(e.AGENTMESH_WEB_SEARCH_KEY ? ["web_search"] : [])];
  return { tools, max_tool_rounds: e.AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS };
}

/** Everything a coordinator needs, parsed once at start-up and frozen. */
export interface CoordinatorConfig {
  readonly natsUrl: string;
  /** NKey seed file and TLS files for the NATS connection. */
  readonly nats: NatsAccess;
  readonly redisUrl: string;
  /** CA file for a `rediss://` server (REDIS_TLS_CA). */
  readonly redisTlsCa: string | undefined;
  /** The sentinels that name the primary (REDIS_SENTINELS); undefined = REDIS_URL is the server. */
  readonly redisSentinel: RedisSentinelSettings | undefined;
  /** Replicas that confirm each commit before its outbox goes out (0 = no wait), and how long they may take. */
  readonly redisWait: { readonly replicas: number; readonly timeoutMs: number };
  readonly prefix: string;
  readonly logLevel: string;
  readonly crashAt: string | undefined;
  readonly concurrency: number;
  readonly taskAckWaitMs: number;
  readonly inboxAckWaitMs: number;
  readonly taskMaxDeliver: number;
  readonly defaults: RuntimeDefaults;
  readonly activeTtlMs: number;
  readonly finishedTtlMs: number;
  readonly cancelledTtlMs: number;
  /** A thread's long-term references: how many it keeps and how long after their last write. */
  readonly longTermRefs: { readonly max: number; readonly ttlMs: number };
  /** Replicas of every stream and of the KV bucket (3 on a cluster). */
  readonly streamReplicas: number;
  readonly requireDurable: boolean;
  /** Where transition and session spans go (none = off). */
  readonly tracing: TracingConfig;
  /** Where the process serves its metrics; null = it keeps none. */
  readonly metrics: MetricsSettings | null;
}

/** Reads the coordinator configuration, listing every problem at once. */
export function loadCoordinatorConfig(env: Record<string, string | undefined>): CoordinatorConfig {
  const e = parseEnv(NAMES, env);
  const budgets = {
    max_steps: e.AGENTMESH_MAX_STEPS,
    max_tokens: e.AGENTMESH_MAX_TOKENS ?? null,
    max_cost_usd: e.AGENTMESH_MAX_COST_USD ?? null,
    max_wall_ms: e.AGENTMESH_MAX_WALL_MS ?? null,
  };
  const ceilings = {
    max_steps: e.AGENTMESH_MAX_STEPS_CEILING,
    max_tokens: e.AGENTMESH_MAX_TOKENS_CEILING,
    max_cost_usd: e.AGENTMESH_MAX_COST_USD_CEILING,
    max_wall_ms: e.AGENTMESH_MAX_WALL_MS_CEILING,
  };
  // A default above its ceiling would be silently lowered: say so at start-up instead.
  const problems = (Object.keys(budgets) as Array<keyof typeof budgets>)
    .filter((k) => budgets[k] !== null && (budgets[k] as number) > ceilings[k])
    .map(
      (k) =>
        `the default ${k} ${String(budgets[k])} is above its ceiling ${ceilings[k]} (AGENTMESH_${k.toUpperCase()}_CEILING)`,
    );
  if (e.AGENTMESH_PAUSE_TIMEOUT_MS >= e.AGENTMESH_SESSION_TTL_MS) {
    // Otherwise a paused session's keys expire first and it vanishes with no terminal event.
    problems.push(
      `AGENTMESH_PAUSE_TIMEOUT_MS ${e.AGENTMESH_PAUSE_TIMEOUT_MS} must be below AGENTMESH_SESSION_TTL_MS ${e.AGENTMESH_SESSION_TTL_MS}`,
    );
  }
  const halo = haloSettings(e, problems);
  const supervisor = supervisorSettings(e, problems);
  const tracing = tracingConfig(e, problems);
  if (problems.length) throw configError(problems);
  return Object.freeze({
    ...connectionConfig(e),
    logLevel: e.LOG_LEVEL,
    crashAt: e.AGENTMESH_CRASH_AT,
    concurrency: e.AGENTMESH_COORDINATOR_CONCURRENCY,
    taskAckWaitMs: e.AGENTMESH_TASK_ACK_WAIT_MS,
    inboxAckWaitMs: e.AGENTMESH_INBOX_ACK_WAIT_MS,
    taskMaxDeliver: e.AGENTMESH_TASK_MAX_DELIVER,
    defaults: {
      budgets,
      ceilings,
      taskDeadlineMs: e.AGENTMESH_TASK_DEADLINE_MS,
      maxToolCallsPerSession: e.AGENTMESH_MAX_TOOL_CALLS_PER_SESSION,
      sessionDeadlineMs: e.AGENTMESH_SESSION_DEADLINE_MS,
      pauseTimeoutMs: e.AGENTMESH_PAUSE_TIMEOUT_MS,
      halo,
      supervisor,
      criticChain: criticChainSettings(e),
      clarify: {
        max_clarifications: e.AGENTMESH_CLARIFY_MAX_CLARIFICATIONS,
        max_history: e.AGENTMESH_CLARIFY_MAX_HISTORY,
      },
    },
    activeTtlMs: e.AGENTMESH_SESSION_TTL_MS,
    finishedTtlMs: e.AGENTMESH_FINISHED_TTL_MS,
    cancelledTtlMs: e.AGENTMESH_CANCELLED_TTL_MS,
    longTermRefs: { max: e.AGENTMESH_LONG_TERM_REFS_MAX, ttlMs: e.AGENTMESH_LONG_TERM_REFS_TTL_MS },
    streamReplicas: e.AGENTMESH_STREAM_REPLICAS,
    requireDurable: e.AGENTMESH_REQUIRE_DURABLE,
    redisWait: { replicas: e.AGENTMESH_REDIS_WAIT_REPLICAS, timeoutMs: e.AGENTMESH_REDIS_WAIT_TIMEOUT_MS },
    tracing,
    metrics: metricsSettings(e),
  });
}
