import { NATS_ACCESS_VARS, natsAccess, parseEnv } from "@agentmesh/service-kit";

/** What the CLI reads from the environment. */
export function loadCliConfig(env: Record<string, string | undefined>) {
  const e = parseEnv(["NATS_URL", "REDIS_URL", "REDIS_TLS_CA", "AGENTMESH_PREFIX", "AGENTMESH_FINISHED_TTL_MS", "AGENTMESH_SESSION_TTL_MS", ...NATS_ACCESS_VARS] as const, env);
  return Object.freeze({ natsUrl: e.NATS_URL, nats: natsAccess(e), redisUrl: e.REDIS_URL, redisTlsCa: e.REDIS_TLS_CA, prefix: e.AGENTMESH_PREFIX, activeTtlMs: e.AGENTMESH_SESSION_TTL_MS, finishedTtlMs: e.AGENTMESH_FINISHED_TTL_MS });
}
export type CliConfig = ReturnType<typeof loadCliConfig>;
