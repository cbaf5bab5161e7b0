import { AgentmeshError } from "@agentmesh/contracts";
import { describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import type { McpClient, McpToolInfo } from "./client.js";
import type { McpServerConfig } from "./config.js";
import { mcpAllowedRoles, registerMcpTools } from "./register.js";

const config: McpServerConfig = {
  name: "bio",
  transport: "http",
  url: "http://127.0.0.1:1/mcp",
  timeoutMs: 750,
  allow: { researcher: "*", expert: ["search_articles"] },
};
const tools: McpToolInfo[] = [
  {
    name: "search_articles",
    description: "Search articles",
    inputSchema: {
      type: "object",
      properties: { query: { type: "string", minLength: 1 } },
      required: ["query"],
      $schema: "http://json-schema.org/draft-07/schema#",
    },
  },
  {
    name: "get-gene",
    description: "",
    inputSchema: {
      type: "object",
      properties: { symbol: { type: "string" } },
      required: ["symbol"],
      $schema: "https://json-schema.org/draft/2020-12/schema",
    },
  },
  { name: "dotted.name", description: "cannot be registered", inputSchema: { type: "object" } },
  {
    name: "bad_schema",
    description: "its schema is broken",
    inputSchema: { type: "object", properties: { x: { type: "no-such-type" } } },
  },
];

/** A client that answers from memory and records what it was asked: this tests the registration, not the SDK. */
function fakeClient(): McpClient & { calls: { tool: string; args: unknown; timeoutMs: number | undefined }[] } {
  const calls: { tool: string; args: unknown; timeoutMs: number | undefined }[] = [];
  return {
    server: config.name,
    config,
    calls,
    listTools: async () => tools,
    async callTool(tool, args, opts) {
      calls.push({ tool, args, timeoutMs: opts?.timeoutMs });
      if (tool === "get-gene") throw new AgentmeshError("tool_error", "server down", { retryable: false });
      return {
        text: `found ${String(args.query)}`,
        citations: [{ title: "t", url: "https://a.example/1", path: null, snippet: "" }],
      };
    },
    close: async () => undefined,
  };
}

describe("registerMcpTools", () => {
  it("registers each usable tool as mcp.<server>.<tool> with the server's schema, timeout and allow-list", async () => {
    const registry = createToolRegistry();
    const reg = await registerMcpTools(registry, fakeClient());
    expect(reg.registered).toEqual(["mcp.bio.search_articles", "mcp.bio.get-gene"]);
    expect(reg.skipped.map((s) => s.tool)).toEqual(["dotted.name", "bad_schema"]);
    const listed = registry.list();
    expect(listed.map((t) => [t.name, t.allowedRoles, t.timeoutMs])).toEqual([
      ["mcp.bio.get-gene", ["researcher"], 750],
      ["mcp.bio.search_articles", ["researcher", "expert"], 750],
    ]);
    expect(listed[1]?.inputSchema).toEqual(tools[0]?.inputSchema);
    expect(listed[0]?.description).toBe("tool get-gene of the MCP server bio");
    expect(registry.list({ role: "expert" }).map((t) => t.name)).toEqual(["mcp.bio.search_articles"]);
  });

  it("goes through the executor: role checks and the server's schema before any call, then the answer", async () => {
    const registry = createToolRegistry();
    const client = fakeClient();
    await registerMcpTools(registry, client);
    const executor = createSafeExecutor({ registry });
    const base = { sessionId: "s1", taskId: "t1" } as const;

    const denied = await executor.call({
      ...base,
      tool: "mcp.bio.get-gene",
      args: { symbol: "BRCA1" },
      role: "expert",
    });
    expect(denied.ok ? null : denied.error.code).toBe("permission_denied");
    const invalid = await executor.call({
      ...base,
      tool: "mcp.bio.search_articles",
      args: { query: "" },
      role: "expert",
    });
    expect(invalid.ok ? null : [invalid.error.code, invalid.error.message]).toEqual([
      "invalid_tool_input",
      expect.stringContaining("must NOT have fewer than 1 characters"),
    ]);
    const invalid2020 = await executor.call({
      ...base,
      tool: "mcp.bio.get-gene",
      args: { symbol: 7 },
      role: "researcher",
    });
    expect(invalid2020.ok ? null : invalid2020.error.code).toBe("invalid_tool_input");
    expect(client.calls).toEqual([]);

    const ok = await executor.call({
      ...base,
      tool: "mcp.bio.search_articles",
      args: { query: "her2" },
      role: "expert",
    });
    expect(ok.ok ? ok.output : ok.error).toEqual({
      text: "found her2",
      citations: [{ title: "t", url: "https://a.example/1", path: null, snippet: "" }],
    });
    expect(client.calls).toEqual([{ tool: "search_articles", args: { query: "her2" }, timeoutMs: expect.any(Number) }]);
    expect(client.calls[0]?.timeoutMs).toBeLessThanOrEqual(750);

    const failed = await executor.call({
      ...base,
      tool: "mcp.bio.get-gene",
      args: { symbol: "BRCA1" },
      role: "researcher",
    });
    expect(failed.ok ? null : [failed.error.code, failed.records.length]).toEqual(["tool_error", 1]);
  });
});

describe("mcpAllowedRoles", () => {
  it("gives a tool to the roles whose list names it or is *", () => {
    expect(mcpAllowedRoles({ researcher: "*", expert: ["a"], critic: [] }, "a")).toEqual(["researcher", "expert"]);
    expect(mcpAllowedRoles({ researcher: "*", expert: ["a"] }, "b")).toEqual(["researcher"]);
    expect(mcpAllowedRoles({}, "a")).toEqual([]);
  });
});
