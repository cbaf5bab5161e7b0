import { readFileSync } from "node:fs";
import { AgentmeshError, WorkflowName } from "@agentmesh/contracts";
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
import { parseApiKeys, type ApiKeyVerifier } from "./api-keys.js";

const VARS = [
  ...CONNECTION_VARS,
  "LOG_LEVEL",
  "AGENTMESH_ZOD_COMPILE",
  "AGENTMESH_GATEWAY_HOST",
  "AGENTMESH_GATEWAY_PORT",
  "AGENTMESH_API_KEYS",
  "AGENTMESH_API_KEYS_FILE",
  "AGENTMESH_GATEWAY_ANONYMOUS",
  "AGENTMESH_DEFAULT_WORKFLOW",
  "AGENTMESH_RATE_LIMIT",
  "AGENTMESH_RATE_WINDOW_MS",
  "AGENTMESH_MAX_CONCURRENT_SESSIONS",
  "AGENTMESH_IDEMPOTENCY_TTL_MS",
  "AGENTMESH_MAX_BODY_BYTES",
  "AGENTMESH_STREAM_BUFFER_BYTES",
  "AGENTMESH_MAX_OPEN_STREAMS",
  "AGENTMESH_MAX_STREAMS_PER_KEY",
  "AGENTMESH_STREAM_OPEN_RATE",
  "AGENTMESH_SESSION_TTL_MS",
  "AGENTMESH_FINISHED_TTL_MS",
  "AGENTMESH_SESSION_DEADLINE_MS",
  "AGENTMESH_CORS_ORIGINS",
  "AGENTMESH_GATEWAY_ALLOWED_HOSTS",
  "AGENTMESH_HTTP_KEEPALIVE_MS",
  "AGENTMESH_HTTP_HEADERS_TIMEOUT_MS",
  "AGENTMESH_HTTP_REQUEST_TIMEOUT_MS",
  "AGENTMESH_HTTP_MAX_CONNECTIONS",
  ...TRACING_VARS,
  ...METRICS_VARS,
] as const;

/** What the gateway reads from the environment, checked once at start. */
export interface GatewayConfig {
  readonly natsUrl: string;
  readonly nats: NatsAccess;
  readonly redisUrl: string;
  readonly redisTlsCa: string | undefined;
  /** The sentinels that name the primary (REDIS_SENTINELS); undefined = REDIS_URL is the server. */
  readonly redisSentinel: RedisSentinelSettings | undefined;
  readonly prefix: string;
  readonly logLevel: string;
  readonly host: string;
  readonly port: number;
  readonly keys: ApiKeyVerifier;
  /** Requests without a key act as `anonymous` (local use). */
  readonly anonymous: boolean;
  readonly defaultWorkflow: WorkflowName;
  readonly rateLimit: number;
  readonly rateWindowMs: number;
  readonly maxConcurrentSessions: number;
  /** How long an `Idempotency-Key` remembers the request it named. */
  readonly idempotencyTtlMs: number;
  readonly maxBodyBytes: number;
  /** Bytes an open stream holds for a client that does not read (then it ends, resumable). */
  readonly streamBufferBytes: number;
  /** Streams this replica serves at once (503 with Retry-After beyond). */
  readonly maxOpenStreams: number;
  readonly maxStreamsPerKey: number;
  readonly streamOpenRate: number;
  readonly activeTtlMs: number;
  readonly finishedTtlMs: number;
  /** How long a session's concurrency slot is held at most without being released (its wall-clock deadline). */
  readonly sessionSlotTtlMs: number;
  /** Origins whose pages may call the API from a browser (CORS); empty = none. */
  readonly corsOrigins: readonly string[];
  /** Host names accepted in anonymous mode besides the loopback ones. */
  readonly allowedHosts: readonly string[];
  /** The HTTP server's timeouts and connection cap. */
  readonly http: HttpServerSettings;
  /** Where the `submit` spans go (none = off). */
  readonly tracing: TracingConfig;
  /** Where the process serves its (Node) metrics; null = none. */
  readonly metrics: MetricsSettings | null;
}

/** The HTTP server's own bounds (docs/gateway.md, "HTTP"). */
export interface HttpServerSettings {
  readonly keepAliveTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly maxConnections: number;
}

/** Parses the gateway's configuration; every problem is listed at once (`invalid_config`). */
export function loadGatewayConfig(env: Record<string, string | undefined>): GatewayConfig {
  const e = parseEnv(VARS, env);
  const problems: string[] = [];
  const workflow = WorkflowName.safeParse(e.AGENTMESH_DEFAULT_WORKFLOW);
  if (!workflow.success)
    problems.push(
      `AGENTMESH_DEFAULT_WORKFLOW="${e.AGENTMESH_DEFAULT_WORKFLOW}": not a workflow (${WorkflowName.options.join(", ")})`,
    );
  let file: { path: string; text: string } | undefined;
  if (e.AGENTMESH_API_KEYS_FILE !== undefined) {
    try {
      file = { path: e.AGENTMESH_API_KEYS_FILE, text: readFileSync(e.AGENTMESH_API_KEYS_FILE, "utf8") };
    } catch (err) {
      problems.push(
        `AGENTMESH_API_KEYS_FILE: cannot read ${e.AGENTMESH_API_KEYS_FILE} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  }
  if (e.AGENTMESH_HTTP_HEADERS_TIMEOUT_MS > e.AGENTMESH_HTTP_REQUEST_TIMEOUT_MS)
    problems.push(
      `AGENTMESH_HTTP_HEADERS_TIMEOUT_MS (${e.AGENTMESH_HTTP_HEADERS_TIMEOUT_MS}) is over AGENTMESH_HTTP_REQUEST_TIMEOUT_MS (${e.AGENTMESH_HTTP_REQUEST_TIMEOUT_MS}): the headers are part of the request`,
    );
  const tracing = tracingConfig(e, problems);
  if (problems.length) throw configError(problems);
  const keys = parseApiKeys({ inline: e.AGENTMESH_API_KEYS, ...(file ? { file } : {}) });
  if (keys.names.length === 0 && !e.AGENTMESH_GATEWAY_ANONYMOUS) {
    throw new AgentmeshError(
      "invalid_config",
      "the gateway has no API keys: add one with `pnpm gateway:key <name>` (AGENTMESH_API_KEYS or AGENTMESH_API_KEYS_FILE), or set AGENTMESH_GATEWAY_ANONYMOUS=1 for local use",
    );
  }
  return Object.freeze({
    ...connectionConfig(e),
    logLevel: e.LOG_LEVEL,
    host: e.AGENTMESH_GATEWAY_HOST,
    port: e.AGENTMESH_GATEWAY_PORT,
    keys,
    anonymous: e.AGENTMESH_GATEWAY_ANONYMOUS,
    defaultWorkflow: workflow.success ? workflow.data : "supervisor",
    rateLimit: e.AGENTMESH_RATE_LIMIT,
    rateWindowMs: e.AGENTMESH_RATE_WINDOW_MS,
    maxConcurrentSessions: e.AGENTMESH_MAX_CONCURRENT_SESSIONS,
    idempotencyTtlMs: e.AGENTMESH_IDEMPOTENCY_TTL_MS,
    maxBodyBytes: e.AGENTMESH_MAX_BODY_BYTES,
    streamBufferBytes: e.AGENTMESH_STREAM_BUFFER_BYTES,
    maxOpenStreams: e.AGENTMESH_MAX_OPEN_STREAMS,
    maxStreamsPerKey: e.AGENTMESH_MAX_STREAMS_PER_KEY,
    streamOpenRate: e.AGENTMESH_STREAM_OPEN_RATE,
    activeTtlMs: e.AGENTMESH_SESSION_TTL_MS,
    finishedTtlMs: e.AGENTMESH_FINISHED_TTL_MS,
    sessionSlotTtlMs: e.AGENTMESH_SESSION_DEADLINE_MS,
    corsOrigins: e.AGENTMESH_CORS_ORIGINS,
    allowedHosts: e.AGENTMESH_GATEWAY_ALLOWED_HOSTS,
    http: {
      keepAliveTimeoutMs: e.AGENTMESH_HTTP_KEEPALIVE_MS,
      headersTimeoutMs: e.AGENTMESH_HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.AGENTMESH_HTTP_REQUEST_TIMEOUT_MS,
      maxConnections: e.AGENTMESH_HTTP_MAX_CONNECTIONS,
    },
    tracing,
    metrics: metricsSettings(e),
  });
}
