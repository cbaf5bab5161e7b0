import { defineAgent, defineRoleSetup, type AgentSetup } from "@agentmesh/agent-kit";
import type { Logger } from "@agentmesh/service-kit";
import { clipText, createMcpClient, type McpClient } from "@agentmesh/tools";
import { answerViaMcp, mcpChoiceOffline, type McpClients } from "./answer.js";
import { loadMcpConfig, type McpRoleConfig } from "./config.js";

/** The mcp role over the configured servers' clients. */
export function mcpAgent(clients: McpClients) {
  return defineAgent({
    role: "mcp",
    description:
      "Answers through the MCP server named in the task: picks one of its tools, calls it, cites its links and resources (halo's biomcp and llama_mcp)",
    ops: {
      answer: {
        kind: "handler",
        version: "mcp.answer/1",
        contract: "mcp.answer",
        run: (input, ctx) => answerViaMcp(clients, input, ctx),
        summarize: (o) => `${o.citations.length} citation(s), ${o.response_str.length} characters`,
        // the model call that picks the tool, answered offline by word overlap
        offline: mcpChoiceOffline(clients),
      },
    },
  });
}

/**
 * Builds the mcp role from its configuration: one client per server, connected on first use
 * (a stdio server is spawned then) and closed when the role stops.
 */
export function createMcp(cfg: McpRoleConfig, log: Logger): AgentSetup {
  const clients = new Map<string, McpClient>(
    cfg.servers.map((s) => [
      s.name,
      createMcpClient(s, {
        onStderr: (text) => log.debug({ server: s.name, stderr: clipText(text, 500) }, "MCP server stderr"),
      }),
    ]),
  );
  if (clients.size === 0)
    log.warn("no MCP server is configured (AGENTMESH_MCP_SERVERS): every mcp.answer fails tool_unavailable");
  else
    log.info(
      {
        servers: cfg.servers.map((s) => ({ name: s.name, transport: s.transport, mcp_allowed: s.allow.mcp ?? "none" })),
      },
      "MCP servers",
    );
  return {
    agents: [mcpAgent(clients)],
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
    },
  };
}

/** The mcp role folder's entry: its MCP servers come from the environment. */
export default defineRoleSetup("mcp", (env, log) => createMcp(loadMcpConfig(env), log));
