// The executor with MCP servers configured: their tools join its registry as mcp.<server>.<tool>,
// listed to the planner and run as plan steps, each callable only when the server's allow-list
// names the executor (a real MCP server built with the SDK, over stdio).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlanStep, ROLES, type OpRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { stdioTestServer } from "@agentmesh/tools/testing";
import { executeStep, listTools } from "./execute.js";
import { createExecutorTools, type ExecutorTools } from "./tools.js";

const lines: string[] = [];
const log = createLogger({ service: "test", level: "warn", destination: { write: (l: string) => lines.push(l) } });
let tools: ExecutorTools;

beforeAll(async () => {
  tools = await createExecutorTools(
    {
      corpusDir: "/nonexistent-corpus",
      fileRoots: [],
      webSearch: null,
      images: null,
      embeddings: null,
      testTools: false,
      mcpServers: [
        stdioTestServer("bio", { allow: { executor: ["search_articles"] } }),
        stdioTestServer("other", { allow: { researcher: "*" } }),
        { name: "down", transport: "http", url: "http://127.0.0.1:9/mcp", timeoutMs: 1000, allow: { executor: "*" } },
      ],
    },
    log,
  );
}, 30_000);
afterAll(async () => {
  await tools?.close();
});

const step = (tool: string): PlanStep =>
  PlanStep.parse({
    description: `Search with ${tool}`,
    tool,
    args: [{ name: "query", value: "HER2" }],
    expected_outcome: "articles",
  });
const request = (s: PlanStep): OpRequest<"executor", "execute"> => ({
  question: "What treats HER2-positive disease?",
  step_index: 0,
  step: s,
  strategy: "tool",
  query: null,
  limits: { max_attempts: 1, timeout_ms: 5000 },
  policy: { listed: [s.tool], banned: [] },
  context: null,
});
const ctx = { sessionId: "s1", taskId: "s1.1.0.0", signal: new AbortController().signal };

describe("executor: MCP servers' tools", () => {
  it("lists the tools the servers' allow-lists give the executor, under valid plan tool names", () => {
    const listed = listTools(tools.registry, 50).map((t) => t.name);
    expect(listed).toContain("mcp.bio.search_articles");
    expect(listed.filter((n) => n.startsWith("mcp."))).toEqual(["mcp.bio.search_articles"]);
    expect(ROLES.executor.list_tools.response.safeParse({ tools: listTools(tools.registry, 50) }).success).toBe(true);
  });

  it("runs a plan step naming mcp.<server>.<tool>: the tool's text, its links and resources as citations", async () => {
    const out = await executeStep(request(step("mcp.bio.search_articles")), (c) => tools.call(c), ctx);
    expect(ROLES.executor.execute.response.parse(out)).toEqual(out);
    expect(out).toMatchObject({ ok: true, tool: "mcp.bio.search_articles", output: 'Two articles match "HER2".' });
    expect(out.citations.map((c) => c.path)).toEqual([
      "https://articles.example/a/1",
      "/data/articles/2.txt",
      "https://articles.example/a/3",
    ]);
  });

  it("a server tool the allow-list does not give the executor is refused before any call", async () => {
    const out = await executeStep(request(step("mcp.other.search_articles")), (c) => tools.call(c), ctx);
    expect(out).toMatchObject({ ok: false, error: { code: "permission_denied" } });
  });

  it("a server that cannot be reached at start is left out with a warning; the executor still starts", () => {
    expect(tools.registry.list().some((t) => t.name.startsWith("mcp.down."))).toBe(false);
    expect(lines.some((l) => l.includes("MCP server not reachable at start") && l.includes('"server":"down"'))).toBe(
      true,
    );
  });
});
