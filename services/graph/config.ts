import { parseEnv } from "@agentmesh/service-kit";

const NAMES = ["AGENTMESH_GRAPH_PATH"] as const;

/** Where the graph role's triples are: a `.jsonl` file or a folder of them. */
export interface GraphConfig {
  readonly graphPath: string;
}

/** Reads the graph role's configuration from an environment, listing every problem at once. */
export function loadGraphConfig(env: Record<string, string | undefined>): GraphConfig {
  const e = parseEnv(NAMES, env);
  return Object.freeze({ graphPath: e.AGENTMESH_GRAPH_PATH });
}
