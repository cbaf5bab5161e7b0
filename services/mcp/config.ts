import { parseEnv } from "@agentmesh/service-kit";
import { parseMcpServers, type McpServerConfig } from "@agentmesh/tools";

const NAMES = ["AGENTMESH_MCP_SERVERS"] as const;

/** The MCP servers the mcp role may be asked to answer through. */
export interface McpRoleConfig {
  readonly servers: readonly McpServerConfig[];
}

/** Reads the mcp role's configuration from an environment; a bad server list is one error listing every problem. */
export function loadMcpConfig(env: Record<string, string | undefined>): McpRoleConfig {
  const e = parseEnv(NAMES, env);
  return Object.freeze({ servers: Object.freeze(parseMcpServers(e.AGENTMESH_MCP_SERVERS)) });
}
