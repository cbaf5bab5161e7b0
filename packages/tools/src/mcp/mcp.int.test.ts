// The MCP client against real MCP servers built with the SDK: one spawned over stdio, one over
// streamable HTTP on 127.0.0.1 in its own process (src/test-support/mcp).
import { AgentmeshError } from "@agentmesh/contracts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { startHttpTestServer, stdioTestServer, type HttpTestServer } from "../test-support/mcp/servers.js";
import { chooseMcpTool } from "./choose.js";
import { createMcpClient, type McpClient } from "./client.js";
import type { McpServerConfig } from "./config.js";
import { registerMcpTools } from "./register.js";

const TOOLS = ["search_articles", "slow", "fail", "crash", "cancellations", "pid", "env_keys"];
const CITATIONS = [
  {
    title: "Trastuzumab in HER2+ disease",
    url: "https://articles.example/a/1",
    path: null,
    snippet: "A review of trastuzumab regimens.",
  },
  { title: "2.txt", url: null, path: "/data/articles/2.txt", snippet: "Local notes on pertuzumab." },
  {
    title: "3",
    url: "https://articles.example/a/3",
    path: null,
    snippet: "Embedded abstract about neoadjuvant therapy.",
  },
];

let http: HttpTestServer;
const open: McpClient[] = [];
const client = (config: McpServerConfig): McpClient => {
  const c = createMcpClient(config, { connectTimeoutMs: 5000 });
  open.push(c);
  return c;
};

async function failure(p: Promise<unknown>): Promise<AgentmeshError> {
  const err: unknown = await p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentmeshError);
  return err as AgentmeshError;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  http = await startHttpTestServer();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await http.kill();
});

describe.each([
  ["stdio", () => stdioTestServer()],
  ["streamable HTTP", () => http.config()],
])("MCP client over %s", (_, config) => {
  it("lists the tools with their descriptions and input schemas", async () => {
    const tools = await client(config()).listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    expect(tools[0]?.description).toMatch(/^Search published articles/);
    expect(tools[0]?.inputSchema).toMatchObject({
      type: "object",
      required: ["query"],
      properties: { query: { type: "string" } },
    });
  });

  it("calls a tool and maps text, links and embedded resources to text and citations", async () => {
    const res = await client(config()).callTool("search_articles", { query: "HER2" });
    expect(res).toEqual({ text: 'Two articles match "HER2".', citations: CITATIONS });
  });

  it("refuses arguments that fail the server's schema before calling", async () => {
    const c = client(config());
    const err = await failure(c.callTool("search_articles", { query: 42, extra: true }));
    expect([err.code, err.message]).toEqual([
      "invalid_tool_input",
      `mcp.${c.server}.search_articles: arguments/query must be string`,
    ]);
    expect((await failure(c.callTool("no_such_tool", {}))).code).toBe("tool_not_found");
  });

  it("times out, cancels the call on the server and keeps the connection usable", async () => {
    const c = client(config());
    const t0 = Date.now();
    const err = await failure(c.callTool("slow", { ms: 10_000 }, { timeoutMs: 300 }));
    expect([err.code, err.retryable]).toEqual(["timeout", true]);
    expect(Date.now() - t0).toBeLessThan(2000);
    await expect.poll(async () => (await c.callTool("cancellations", {})).text).not.toBe("0");
  });

  it("stops at the caller's abort with its reason", async () => {
    const c = client(config());
    const ac = new AbortController();
    setTimeout(() => ac.abort(new AgentmeshError("deadline_exceeded", "task deadline")), 200);
    const err = await failure(c.callTool("slow", { ms: 10_000 }, { signal: ac.signal }));
    expect(err.code).toBe("deadline_exceeded");
    const plain = new AbortController();
    plain.abort();
    expect((await failure(c.callTool("pid", {}, { signal: plain.signal }))).code).toBe("cancelled");
  });

  it("reports a tool's error result as the refused call's invalid_tool_input, not retryable, with the server's message", async () => {
    const err = await failure(client(config()).callTool("fail", {}));
    expect([err.code, err.retryable, err.message]).toEqual([
      "invalid_tool_input",
      false,
      `MCP tool "${config().name}.fail" refused the call: the article index is down`,
    ]);
  });

  it("registers the tools as mcp.<server>.<tool> and runs them through the executor", async () => {
    const registry = createToolRegistry();
    const c = client({ ...config(), allow: { researcher: "*", expert: ["search_articles"] } });
    const reg = await registerMcpTools(registry, c);
    expect(reg.registered).toEqual(TOOLS.map((t) => `mcp.${c.server}.${t}`));
    expect(registry.list({ role: "expert" }).map((t) => t.name)).toEqual([`mcp.${c.server}.search_articles`]);
    const executor = createSafeExecutor({ registry });
    const req = { role: "expert", sessionId: "s", taskId: "t" } as const;
    const ok = await executor.call({ ...req, tool: `mcp.${c.server}.search_articles`, args: { query: "HER2" } });
    expect(ok.ok ? ok.output : ok.error).toEqual({ text: 'Two articles match "HER2".', citations: CITATIONS });
    const bad = await executor.call({ ...req, tool: `mcp.${c.server}.search_articles`, args: {} });
    expect(bad.ok ? null : bad.error.code).toBe("invalid_tool_input");
    const denied = await executor.call({ ...req, tool: `mcp.${c.server}.slow`, args: { ms: 1 } });
    expect(denied.ok ? null : denied.error.code).toBe("permission_denied");
  });

  it("lets the offline chooser pick the search tool from the listed tools", async () => {
    const c = client(config());
    const choice = chooseMcpTool("Find articles on trastuzumab", await c.listTools());
    expect(choice).toEqual({
      kind: "call",
      tool: "search_articles",
      args: { query: "Find articles on trastuzumab" },
      shared: 1,
    });
    if (choice.kind !== "call") throw new Error("expected a choice");
    expect((await c.callTool(choice.tool, choice.args)).citations).toHaveLength(3);
  });
});

describe("MCP over stdio: the process", () => {
  it("gets a minimal env, never ours", async () => {
    const before = process.env.AGENTMESH_LLM_API_KEY;
    process.env.AGENTMESH_LLM_API_KEY = "canary";
    try {
      const keys = (await client(stdioTestServer()).callTool("env_keys", {})).text.split(",");
      expect(keys).not.toContain("AGENTMESH_LLM_API_KEY");
      for (const k of keys) expect(["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]).toContain(k);
    } finally {
      if (before === undefined) delete process.env.AGENTMESH_LLM_API_KEY;
      else process.env.AGENTMESH_LLM_API_KEY = before;
    }
  });

  it("is gone after close", async () => {
    const c = client(stdioTestServer());
    const pid = Number((await c.callTool("pid", {})).text);
    expect(alive(pid)).toBe(true);
    await c.close();
    expect(alive(pid)).toBe(false);
    expect((await failure(c.callTool("pid", {}))).code).toBe("tool_unavailable");
  });

  it("crashing mid-call is a retryable tool_error, and the next call spawns it anew", async () => {
    const c = client(stdioTestServer());
    const pid = Number((await c.callTool("pid", {})).text);
    const err = await failure(c.callTool("crash", {}));
    expect([err.code, err.retryable]).toEqual(["tool_error", true]);
    const again = Number((await c.callTool("pid", {})).text);
    expect(again).not.toBe(pid);
  });

  it("a caller giving up while the server starts ends only its own wait", async () => {
    const c = client(stdioTestServer());
    const ac = new AbortController();
    const first = failure(c.callTool("pid", {}, { signal: ac.signal }));
    const second = c.callTool("pid", {});
    ac.abort();
    expect((await first).code).toBe("cancelled");
    expect(Number((await second).text)).toBeGreaterThan(0);
  });

  it("is tool_unavailable when the command cannot start", async () => {
    const config = { ...stdioTestServer(), command: "/nonexistent/mcp-server" };
    const err = await failure(client(config).listTools());
    expect([err.code, err.message]).toEqual([
      "tool_unavailable",
      expect.stringContaining('MCP server "stdio_test" cannot be reached'),
    ]);
  });
});

describe("MCP over HTTP: the server going away", () => {
  it("fails a call in flight as a retryable tool_error, then later calls as tool_unavailable", async () => {
    const own = await startHttpTestServer();
    try {
      const c = client(own.config("doomed", { timeoutMs: 20_000 }));
      await c.listTools();
      const t0 = Date.now();
      const call = failure(c.callTool("slow", { ms: 15_000 }));
      setTimeout(() => void own.kill(), 300);
      const err = await call;
      expect([err.code, err.retryable]).toEqual(["tool_error", true]);
      expect(Date.now() - t0).toBeLessThan(5000);
      expect((await failure(c.callTool("pid", {}))).code).toBe("tool_unavailable");
    } finally {
      await own.kill();
    }
  });

  it("is tool_unavailable when nothing listens", async () => {
    const err = await failure(
      client({
        name: "nobody",
        transport: "http",
        url: "http://127.0.0.1:9/mcp",
        timeoutMs: 1000,
        allow: {},
      }).listTools(),
    );
    expect(err.code).toBe("tool_unavailable");
  });
});
