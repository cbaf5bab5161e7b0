import { AgentmeshError } from "@agentmesh/contracts";
import { describe, expect, it } from "vitest";
import { parseMcpServers } from "./config.js";

function problems(text: string): string[] {
  try {
    parseMcpServers(text);
  } catch (err) {
    expect(err).toBeInstanceOf(AgentmeshError);
    expect((err as AgentmeshError).code).toBe("invalid_config");
    return (err as AgentmeshError).message
      .split("\n")
      .slice(1)
      .map((l) => l.replace(/^\s*- /, ""));
  }
  throw new Error("expected invalid_config");
}

describe("parseMcpServers", () => {
  it("reads stdio and HTTP servers with their defaults, in order", () => {
    const servers = parseMcpServers(
      JSON.stringify({
        biomcp: { command: "biomcp", args: ["run"], allow: { researcher: "*" } },
        llama: { url: "http://127.0.0.1:8765/mcp", timeoutMs: 20000, allow: { expert: ["search"] } },
      }),
    );
    expect(servers).toEqual([
      {
        name: "biomcp",
        transport: "stdio",
        command: "biomcp",
        args: ["run"],
        timeoutMs: 10000,
        allow: { researcher: "*" },
      },
      {
        name: "llama",
        transport: "http",
        url: "http://127.0.0.1:8765/mcp",
        timeoutMs: 20000,
        allow: { expert: ["search"] },
      },
    ]);
  });

  it("treats an absent or blank setting as no servers", () => {
    expect(parseMcpServers(undefined)).toEqual([]);
    expect(parseMcpServers("  ")).toEqual([]);
  });

  it("lists every problem at once, each under its path", () => {
    const found = problems(
      JSON.stringify({
        Bad: { command: "x" },
        both: { command: "a", url: "http://127.0.0.1:1/mcp" },
        neither: { allow: { nobody: "*" } },
        ftp: { url: "ftp://127.0.0.1/x", args: ["-v"], timeoutMs: "soon", extra: 1 },
      }),
    );
    expect(found).toEqual([
      expect.stringMatching(/^AGENTMESH_MCP_SERVERS\.Bad: server name must be lower-case/),
      'AGENTMESH_MCP_SERVERS.both: needs either "command" (stdio) or "url" (streamable HTTP), exactly one',
      'AGENTMESH_MCP_SERVERS.neither.allow: Unrecognized key: "nobody"',
      'AGENTMESH_MCP_SERVERS.neither: needs either "command" (stdio) or "url" (streamable HTTP), exactly one',
      "AGENTMESH_MCP_SERVERS.ftp.url: must be an http(s) URL",
      expect.stringMatching(/^AGENTMESH_MCP_SERVERS\.ftp\.timeoutMs: .*expected number/),
      'AGENTMESH_MCP_SERVERS.ftp: Unrecognized key: "extra"',
      'AGENTMESH_MCP_SERVERS.ftp: "args" and "cwd" are for a stdio server ("command") only',
    ]);
  });

  it("says when the setting is not JSON or not an object", () => {
    expect(problems("{")).toEqual([expect.stringMatching(/^AGENTMESH_MCP_SERVERS: not valid JSON/)]);
    expect(problems("[]")).toEqual([expect.stringMatching(/^AGENTMESH_MCP_SERVERS: .*expected record/)]);
  });
});
