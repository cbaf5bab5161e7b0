import { CONNECTION_VARS, connectionConfig, parseEnv } from "@agentmesh/service-kit";

/** What the CLI reads from the environment. */
export function loadCliConfig(env: Record<string, string | undefined>) {
  const e = parseEnv(
    [
      ...CONNECTION_VARS,
      "AGENTMESH_FINISHED_TTL_MS",
      "AGENTMESH_SESSION_TTL_MS",
      "TRACEPARENT",
      "AGENTMESH_ZOD_COMPILE",
    ] as const,
    env,
  );
  return Object.freeze({
    ...connectionConfig(e),
    activeTtlMs: e.AGENTMESH_SESSION_TTL_MS,
    finishedTtlMs: e.AGENTMESH_FINISHED_TTL_MS,
    traceparent: e.TRACEPARENT,
  });
}
export type CliConfig = ReturnType<typeof loadCliConfig>;
