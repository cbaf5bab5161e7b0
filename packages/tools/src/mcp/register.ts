import type { RoleName } from "@agentmesh/contracts";
import { z } from "zod";
import { defineTool, type ToolDefinition, type ToolRegistry } from "../registry.js";
import { clipText } from "../text.js";
import type { McpClient, McpToolInfo } from "./client.js";
import type { McpServerConfig } from "./config.js";
import { McpCallResult } from "./result.js";
import { compileArgsCheck } from "./schema.js";

/** The registry name of an MCP server's tool. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp.${server}.${tool}`;
}

/** What registering one server's tools did. */
export interface McpRegistration {
  readonly server: string;
  /** Registry names, in the server's order. */
  readonly registered: readonly string[];
  /** Tools left out, with why (a name the registry cannot hold, a schema that does not compile). */
  readonly skipped: readonly { readonly tool: string; readonly reason: string }[];
}

// what the registry accepts after `mcp.<server>.`
const TOOL_PART = /^[A-Za-z0-9_-]{1,50}$/;

/** The roles the server's allow-list lets call `tool`. */
export function mcpAllowedRoles(allow: McpServerConfig["allow"], tool: string): RoleName[] {
  return (Object.entries(allow) as [RoleName, "*" | readonly string[] | undefined][])
    .filter(([, tools]) => tools === "*" || (tools?.includes(tool) ?? false))
    .map(([role]) => role);
}

/**
 * Registry definitions of a server's tools: arguments checked against the server's own JSON
 * Schema (so the executor refuses bad ones as `invalid_tool_input` before any call), the answer
 * as `{ text, citations }`, the server's timeout, and its allow-list per role. A timeout is not
 * retried: a server that was too slow once is likely slow again.
 */
export function mcpToolDefinitions(
  client: McpClient,
  tools: readonly McpToolInfo[],
): { definitions: ToolDefinition[]; skipped: McpRegistration["skipped"] } {
  const definitions: ToolDefinition[] = [];
  const skipped: { tool: string; reason: string }[] = [];
  const { name: server, allow, timeoutMs } = client.config;
  for (const t of tools) {
    if (!TOOL_PART.test(t.name)) {
      skipped.push({ tool: t.name, reason: `the name must match ${TOOL_PART} to be registered` });
      continue;
    }
    let check;
    try {
      check = compileArgsCheck(t.inputSchema);
    } catch (err) {
      skipped.push({
        tool: t.name,
        reason: `its input schema does not compile: ${clipText((err as Error).message, 200)}`,
      });
      continue;
    }
    const name = mcpToolName(server, t.name);
    const input = z.record(z.string(), z.unknown()).superRefine((args, ctx) => {
      const problem = check(args);
      if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
    });
    definitions.push(
      defineTool({
        name,
        description: clipText(t.description, 1000) || `tool ${t.name} of the MCP server ${server}`,
        input,
        inputJsonSchema: t.inputSchema,
        output: McpCallResult,
        allowedRoles: mcpAllowedRoles(allow, t.name),
        timeoutMs,
        retry: { nonRetryable: ["timeout"] },
        execute: (args, ctx) =>
          client.callTool(t.name, args, { signal: ctx.signal, timeoutMs: Math.max(1, ctx.deadline - Date.now()) }),
      }),
    );
  }
  return { definitions, skipped };
}

/** Lists the server's tools and registers each as `mcp.<server>.<tool>`; fails as the client does (`tool_unavailable`, ...). */
export async function registerMcpTools(
  registry: ToolRegistry,
  client: McpClient,
  opts: { readonly signal?: AbortSignal } = {},
): Promise<McpRegistration> {
  const { definitions, skipped } = mcpToolDefinitions(client, await client.listTools(opts));
  for (const d of definitions) registry.register(d);
  return { server: client.server, registered: definitions.map((d) => d.name), skipped };
}
