// The mcp role against real MCP servers built with the SDK (the tools package's test servers):
// one spawned over stdio, one over streamable HTTP in its own process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentmeshError, ROLES, type McpAnswerRequest } from "@agentmesh/contracts";
import type { HandlerModelCall } from "@agentmesh/agent-kit";
import { TRACING_OFF, createLogger, type SpanHandle } from "@agentmesh/service-kit";
import { createMcpClient, type McpClient, type McpServerConfig } from "@agentmesh/tools";
import { startHttpTestServer, stdioTestServer, type HttpTestServer } from "@agentmesh/tools/testing";
import { answerViaMcp, mcpChoiceOffline, type McpChoice, type McpClients } from "./answer.js";
import { createMcp, mcpAgent } from "./role.js";

const log = createLogger({ service: "mcp-test", level: "silent" });
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
let clients: Map<string, McpClient>;

const clientFor = (config: McpServerConfig): McpClient => createMcpClient(config, { connectTimeoutMs: 5000 });

beforeAll(async () => {
  http = await startHttpTestServer();
  clients = new Map([
    ["biomcp", clientFor(stdioTestServer("biomcp", { allow: { mcp: "*" } }))],
    ["llama_mcp", clientFor(http.config("llama_mcp", { allow: { mcp: ["search_articles", "slow"] } }))],
    ["private", clientFor(stdioTestServer("private", { allow: { researcher: "*" } }))],
    ["numbers", clientFor(stdioTestServer("numbers", { allow: { mcp: ["slow", "cancellations"] } }))],
  ]);
});

afterAll(async () => {
  await Promise.all([...clients.values()].map((c) => c.close()));
  await http.kill();
});

/** A handler context whose model call is answered by the role's offline behaviour, as the offline engine does. */
function offline(all: McpClients, input: McpAnswerRequest, signal = new AbortController().signal) {
  const choose = mcpChoiceOffline(all);
  return {
    signal,
    complete: async <T>(call: HandlerModelCall<T>): Promise<T> =>
      call.schema.parse(await choose(input, { configHint: "", signal })),
  };
}

/** A handler context whose model answers with `choice`, recording its prompts. */
function modelChoosing(choice: McpChoice, signal = new AbortController().signal) {
  const prompts: string[] = [];
  return {
    prompts,
    signal,
    complete: <T>(call: HandlerModelCall<T>): Promise<T> => {
      prompts.push(call.prompt);
      return Promise.resolve(call.schema.parse(choice));
    },
  };
}

async function failure(p: Promise<unknown>): Promise<AgentmeshError> {
  const err: unknown = await p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
  if (!(err instanceof AgentmeshError)) throw err;
  return err;
}

describe("mcp.answer", () => {
  it("offline, over stdio: picks the tool sharing most words with the question, the question its argument; links and resources become citations", async () => {
    const input = { question: "Search published articles about trastuzumab", server: "biomcp" };
    const out = await answerViaMcp(clients, input, offline(clients, input));
    expect(out).toEqual({
      response_str: 'Two articles match "Search published articles about trastuzumab".',
      citations: CITATIONS,
    });
    expect(ROLES.mcp.answer.response.parse(out)).toEqual(out);
  });

  it("offline, over streamable HTTP: the same answer and citations", async () => {
    const input = { question: "Find articles on HER2 therapy", server: "llama_mcp" };
    const out = await answerViaMcp(clients, input, offline(clients, input));
    expect(out).toEqual({ response_str: 'Two articles match "Find articles on HER2 therapy".', citations: CITATIONS });
  });

  it("with a model: the model sees the tools the role may call with their schemas and chooses one and its arguments", async () => {
    const ctx = modelChoosing({ tool: "search_articles", arguments_json: JSON.stringify({ query: "HER2", limit: 2 }) });
    const out = await answerViaMcp(
      clients,
      { question: "What treats HER2-positive cancer?", server: "llama_mcp" },
      ctx,
    );
    expect(out.response_str).toBe('Two articles match "HER2".');
    expect(out.citations).toEqual(CITATIONS);
    expect(ctx.prompts[0]).toContain("- search_articles: Search published articles");
    expect(ctx.prompts[0]).toContain('"query"');
    // only the tools the server's allow-list gives the mcp role are offered
    expect(ctx.prompts[0]).not.toContain("- crash:");
  });

  it("a call the tool refuses fails at once as the tool's invalid_tool_input, not retryable, with the reason", async () => {
    const bad = await failure(
      answerViaMcp(
        clients,
        { question: "HER2?", server: "llama_mcp" },
        modelChoosing({ tool: "search_articles", arguments_json: JSON.stringify({ query: 5 }) }),
      ),
    );
    expect(bad).toMatchObject({ code: "invalid_tool_input", retryable: false });
    expect(bad.message).toContain("mcp.llama_mcp.search_articles: arguments/query must be string");
    // the server's own error result carries its message
    const refused = await failure(
      answerViaMcp(
        clients,
        { question: "HER2?", server: "biomcp" },
        modelChoosing({ tool: "fail", arguments_json: "{}" }),
      ),
    );
    expect(refused).toMatchObject({ code: "invalid_tool_input", retryable: false });
    expect(refused.message).toBe('MCP tool "biomcp.fail" refused the call: the article index is down');
  });

  it("offline, when no tool the role may call can be filled from the question alone, it answers needs_model naming why and calls none", async () => {
    const input = { question: "Wait for the article index", server: "numbers" };
    const err = await failure(answerViaMcp(clients, input, offline(clients, input)));
    expect(err).toMatchObject({ code: "needs_model", retryable: false });
    expect(err.message).toContain(
      'MCP server "numbers": no tool can be called with the question alone (slow takes no text argument; cancellations takes no text argument)',
    );
    expect((await clients.get("numbers")!.callTool("cancellations", {})).text).toBe("0");
  });

  it("a tool it may not call or arguments that are not a JSON object are the model's invalid output", async () => {
    const notAllowed = await failure(
      answerViaMcp(
        clients,
        { question: "HER2?", server: "llama_mcp" },
        modelChoosing({ tool: "crash", arguments_json: "{}" }),
      ),
    );
    expect(notAllowed).toMatchObject({ code: "model_invalid_output" });
    const notJson = await failure(
      answerViaMcp(
        clients,
        { question: "HER2?", server: "llama_mcp" },
        modelChoosing({ tool: "slow", arguments_json: "{ms: 1}" }),
      ),
    );
    expect(notJson).toMatchObject({ code: "model_invalid_output" });
  });

  it("a server that is not configured fails tool_unavailable, not retryable, naming it", async () => {
    const input = { question: "Search articles", server: "nosuch" };
    const err = await failure(answerViaMcp(clients, input, offline(clients, input)));
    expect(err).toMatchObject({ code: "tool_unavailable", retryable: false });
    expect(err.message).toContain('MCP server "nosuch" is not configured');
  });

  it("a server whose allow-list does not name the mcp role offers it no tool: tool_unavailable", async () => {
    const input = { question: "Search articles", server: "private" };
    const err = await failure(answerViaMcp(clients, input, offline(clients, input)));
    expect(err).toMatchObject({ code: "tool_unavailable", retryable: false });
    expect(err.message).toContain('"private" offers the mcp role no tool');
  });

  it("a call that hangs ends when the task's signal aborts (deadline or cancel), and the server hears of it", async () => {
    const ac = new AbortController();
    const started = Date.now();
    const pending = failure(
      answerViaMcp(
        clients,
        { question: "Wait", server: "llama_mcp" },
        modelChoosing({ tool: "slow", arguments_json: JSON.stringify({ ms: 20_000 }) }, ac.signal),
      ),
    );
    setTimeout(() => ac.abort(new AgentmeshError("deadline_exceeded", "the task deadline passed")), 300);
    const err = await pending;
    expect(err).toMatchObject({ code: "deadline_exceeded" });
    expect(Date.now() - started).toBeLessThan(3000);
    const llama = clients.get("llama_mcp")!;
    await expect
      .poll(async () => Number((await llama.callTool("cancellations", {})).text), { timeout: 3000 })
      .toBeGreaterThanOrEqual(1);
  });

  it("the role's setup connects on first use and closes its connections when it stops: the stdio server process is gone", async () => {
    const setup = createMcp({ servers: [stdioTestServer("biomcp", { allow: { mcp: "*" } })] }, log);
    const op = (setup.agents[0] as ReturnType<typeof mcpAgent>).ops.answer;
    if (op.kind !== "handler") throw new Error("mcp.answer is a handler op");
    const ctx = {
      ...modelChoosing({ tool: "pid", arguments_json: "{}" }),
      completeText: () => Promise.reject(new Error("mcp.answer asks for no free text")),
      taskId: "s1.1.0.0",
      sessionId: "s1",
      attempt: 1,
      log,
      prompt: null,
      tracing: false,
      annotate: () => {},
      span: <T>(n: string, _a: unknown, fn: (s: SpanHandle) => Promise<T>) => TRACING_OFF.run(n, {}, fn),
    };
    const out = (await op.run({ question: "Which process answers?", server: "biomcp" }, ctx)) as {
      response_str: string;
    };
    const pid = Number(out.response_str);
    expect(Number.isInteger(pid) && pid !== process.pid).toBe(true);
    await setup.close?.();
    await expect
      .poll(
        () => {
          try {
            process.kill(pid, 0);
            return "alive";
          } catch {
            return "gone";
          }
        },
        { timeout: 5000 },
      )
      .toBe("gone");
  });
});
