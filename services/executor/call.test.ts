import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATA_VARIABLE, LIMITS, ROLES, type ToolCallRequest } from "@agentmesh/contracts";
import { createOpRunner } from "@agentmesh/agent-kit";
import { createLogger } from "@agentmesh/service-kit";
import { createRecordingTracing } from "@agentmesh/service-kit/testing";
import { createScriptedModel } from "../../test/setup/model.js";
import { callTool, citationsOf, codeRunOf } from "./call.js";
import { executorAgent } from "./role.js";
import { createExecutorTools, type ExecutorTools } from "./tools.js";

const log = createLogger({ service: "test", level: "silent" });
let dir: string;
let tools: ExecutorTools;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "exec-call-"));
  writeFileSync(
    join(dir, "nats.md"),
    "# NATS\n\nJetStream keeps messages in streams and redelivers what a consumer did not acknowledge.",
  );
  tools = await createExecutorTools(
    {
      corpusDir: dir,
      fileRoots: [],
      webSearch: null,
      images: null,
      embeddings: null,
      testTools: false,
      mcpServers: [],
    },
    log,
  );
}, 60_000);
afterAll(async () => {
  await tools?.close();
  rmSync(dir, { recursive: true, force: true });
});

const ALLOWED = ["corpus_search", "web_search", "run_js", "run_python", "generate_image", "analyze_image"];
const request = (
  tool: string,
  args: Record<string, unknown>,
  over: Partial<ToolCallRequest> = {},
): ToolCallRequest => ({
  tool,
  arguments: args,
  allowed: ALLOWED,
  limits: { max_attempts: 2, timeout_ms: 5000 },
  ...over,
});
const ctx = () => ({
  sessionId: `s${Math.random().toString(36).slice(2, 10)}`,
  taskId: "sesscall0001.2.0.0",
  signal: new AbortController().signal,
});
const call = async (req: ToolCallRequest) => {
  const out = await callTool(req, (c) => tools.call(c), ctx());
  // every outcome is one the contract accepts
  expect(ROLES.executor.call.response.safeParse(out).success, JSON.stringify(out)).toBe(true);
  return out;
};

describe("executor.call", () => {
  it("is an op of the executor role: a task runs through the op runner to a valid outcome", async () => {
    const agent = executorAgent(tools);
    expect(agent.ops.call).toMatchObject({ kind: "handler", version: "executor.call/1" });
    const model = createScriptedModel([]);
    const task = {
      task_id: "sesscall0002.1.0.0",
      session_id: "sesscall0002",
      role: "executor",
      op: "call",
      attempt: 0,
      input: request("run_js", { code: "6 * 7" }),
    };
    const outcome = await createOpRunner(agent, model, { log })(task, new AbortController().signal);
    expect(outcome).toMatchObject({
      ok: true,
      output: { tool: "run_js", ok: true, code: { exit_code: 0, result: "42" } },
      provenance: { prompt_version: "executor.call/1", usage: { model_calls: 0 } },
    });
  }, 30_000);

  it("traced: a code run is a sandbox_run span inside a tool_call span inside the task's span", async () => {
    const tracing = createRecordingTracing("executor");
    const task = {
      task_id: "sesscall0003.1.0.0",
      session_id: "sesscall0003",
      role: "executor",
      op: "call",
      attempt: 0,
      input: request("run_js", { code: "6 * 7" }),
    };
    const outcome = await createOpRunner(executorAgent(tools), createScriptedModel([]), { log, tracing })(
      task,
      new AbortController().signal,
    );
    expect(outcome.ok).toBe(true);
    const spans = tracing.spans();
    const byName = (n: string) => spans.find((x) => x.name === n)!;
    expect(byName("tool_call")).toMatchObject({
      parentSpanId: byName("task").spanId,
      attributes: {
        "gen_ai.tool.name": "run_js",
        "agentmesh.ok": true,
        "agentmesh.attempts": 1,
        "agentmesh.session_id": "sesscall0003",
      },
    });
    expect(byName("sandbox_run")).toMatchObject({
      parentSpanId: byName("tool_call").spanId,
      attributes: { "agentmesh.tool": "run_js", "agentmesh.ok": true },
    });
  }, 30_000);

  it("refuses a tool outside the caller's tools before any attempt, permission_denied", async () => {
    let ran = 0;
    const out = await callTool(
      request("run_js", { code: "1" }, { allowed: ["web_search"] }),
      (c) => (ran++, tools.call(c)),
      ctx(),
    );
    expect(out).toMatchObject({
      ok: false,
      tool: "run_js",
      attempts: 0,
      code: null,
      citations: [],
      error: { code: "permission_denied", retryable: false },
    });
    expect(out.content).toContain("permission_denied");
    expect(ran).toBe(1);
  });

  it("runs an allowed tool: corpus_search's passages as content and its files as citations", async () => {
    const out = await call(request("corpus_search", { query: "jetstream redelivers unacknowledged", limit: 3 }));
    expect(out).toMatchObject({
      ok: true,
      error: null,
      attempts: 1,
      code: null,
      citations: [{ title: "nats.md", url: null, path: "nats.md" }],
    });
    expect(out.content).toMatch(/^\[1\] nats\.md: # NATS JetStream keeps messages/);
    expect(out.citations[0]?.snippet).toContain("JetStream keeps messages");
  }, 30_000);

  it("web_search without a provider, and the image tools without an endpoint, answer tool_unavailable as ok:false", async () => {
    for (const [tool, args] of [
      ["web_search", { query: "nats" }],
      ["generate_image", { prompt: "a cat" }],
      ["analyze_image", { image_url: "https://example.com/cat.png", question: "What is it?" }],
    ] as const) {
      const out = await call(request(tool, args));
      expect(out, tool).toMatchObject({
        ok: false,
        tool,
        code: null,
        error: { code: "tool_unavailable", retryable: false },
      });
    }
  });

  it("run_js that runs: ok, exit code 0, stdout and the result", async () => {
    const out = await call(request("run_js", { code: "console.log('sum', 1 + 2); [1, 2].map((x) => x * 2)" }));
    expect(out).toMatchObject({
      ok: true,
      error: null,
      code: { language: "javascript", exit_code: 0, stdout: "sum 3", result: "[2,4]", error: null },
    });
    expect(out.content).toContain("exit code: 0");
    expect(out.content).toContain("stdout:\nsum 3");
  }, 30_000);

  it("run_js stopped by its time limit: not ok, exit code null, the limit as the error", async () => {
    const out = await call(request("run_js", { code: "while (true) {}" }));
    expect(out).toMatchObject({
      ok: false,
      error: { code: "timeout" },
      code: { language: "javascript", exit_code: null, error: expect.stringContaining("limit") },
    });
  }, 30_000);

  it("a data run over the largest attachment the contract takes runs: the code after its DATA_TEXT literal is not refused as too long", async () => {
    // as the supervisor builds a data run: the data's text as a JSON string literal, then the analyst's code
    const rows = Math.floor(LIMITS.maxAttachmentChars / 11) - 2;
    const csv = `a,b\n${"1234567,89\n".repeat(rows)}`;
    const analysis = `rows = DATA_TEXT.strip().split("\\n")[1:]\nprint(len(rows), sum(int(r.split(",")[1]) for r in rows))\n${"# a long analysis\n".repeat(2000)}`;
    const out = await call(
      request(
        "run_python",
        { code: `${DATA_VARIABLE} = ${JSON.stringify(csv)}\n${analysis}` },
        { limits: { max_attempts: 1, timeout_ms: 30_000 } },
      ),
    );
    expect(out).toMatchObject({ ok: true, code: { exit_code: 0 } });
    expect(out.code?.stdout.trim()).toBe(`${rows} ${89 * rows}`);
  }, 60_000);

  it("run_python whose code raises: not ok (tool_error, not retryable), exit code 1, the exception kept", async () => {
    const out = await call(request("run_python", { code: "print('before')\n1 / 0" }));
    if (out.error?.code === "sandbox_unavailable") {
      // no confinement on this machine: the code never ran, so there is no run to report
      expect(out).toMatchObject({ ok: false, code: null });
      return;
    }
    expect(out).toMatchObject({
      ok: false,
      error: { code: "tool_error", retryable: false },
      code: { language: "python", exit_code: 1, stdout: "before\n" },
    });
    expect(out.code?.error).toContain("ZeroDivisionError");
    expect(out.error?.message).toContain("ZeroDivisionError");
    expect(out.content).toContain("exit code: 1");
  }, 60_000);
});

describe("codeRunOf", () => {
  it("keeps the start of stdout and the end of stderr and of the exception within their limits, and says it cut them", () => {
    const run = codeRunOf("python", {
      ok: false,
      result: null,
      error: `Traceback\n${"  frame\n".repeat(400)}ValueError: bad`,
      stdout: "a\n".repeat(3000),
      stderr: `${"w\n".repeat(3000)}last line`,
      truncated: false,
      durationMs: 12,
    });
    expect(run).toMatchObject({ language: "python", exit_code: 1, truncated: true, duration_ms: 12 });
    expect(run.stdout.length).toBe(LIMITS.maxCodeOutputChars);
    expect(run.stdout.startsWith("a\na\n")).toBe(true);
    expect(run.stderr.endsWith("last line")).toBe(true);
    expect(run.error?.endsWith("ValueError: bad")).toBe(true);
    expect(run.error?.length).toBeLessThanOrEqual(2000);
    expect(
      codeRunOf("javascript", {
        ok: true,
        result: "1",
        error: null,
        stdout: "x",
        stderr: "",
        truncated: false,
        durationMs: 1,
      }),
    ).toMatchObject({ exit_code: 0, truncated: false });
  });

  it("over the limit, stdout keeps its last line whole after its start (the data agent's chart rows are the last line it prints)", () => {
    const rows = JSON.stringify(Array.from({ length: 60 }, (_, i) => ({ region: `Region ${i}`, units: i * 10 })));
    const report = Array.from({ length: 120 }, (_, i) => `row ${i}: mean 12.5, median 11, spread 4`).join("\n");
    const run = codeRunOf("python", {
      ok: true,
      result: null,
      error: null,
      stdout: `${report}\n${rows}\n`,
      stderr: "",
      truncated: false,
      durationMs: 3,
    });
    expect(run.truncated).toBe(true);
    expect(run.stdout.length).toBeLessThanOrEqual(LIMITS.maxCodeOutputChars);
    expect(run.stdout.startsWith("row 0: mean 12.5")).toBe(true);
    expect(run.stdout.split("\n").at(-1)).toBe(rows);
    expect(JSON.parse(run.stdout.split("\n").at(-1) ?? "")).toHaveLength(60);
  });
});

describe("citationsOf", () => {
  it("maps web results to url citations and an MCP tool's own, dropping what is not a valid citation, clipping snippets", () => {
    const web = citationsOf("web_search", {
      results: [
        { title: "NATS docs", url: "https://docs.nats.io/", snippet: "x".repeat(700) },
        { title: "", url: "https://nats.io/blog", snippet: "blog" },
        { title: "bad", url: "not a url", snippet: "" },
      ],
    });
    expect(web).toEqual([
      { title: "NATS docs", url: "https://docs.nats.io/", path: null, snippet: expect.stringMatching(/^x+…?$/) },
      { title: "https://nats.io/blog", url: "https://nats.io/blog", path: null, snippet: "blog" },
    ]);
    expect(web[0]?.snippet.length).toBeLessThanOrEqual(500);
    const mcp = citationsOf("mcp.bio.search_articles", {
      text: "t",
      citations: [
        { title: "PMID 1", url: "https://pubmed.ncbi.nlm.nih.gov/1/", path: null, snippet: "s" },
        { title: "f", url: null, path: "/data/a.txt", snippet: "" },
      ],
    });
    expect(mcp).toEqual([
      { title: "PMID 1", url: "https://pubmed.ncbi.nlm.nih.gov/1/", path: null, snippet: "s" },
      { title: "f", url: null, path: "/data/a.txt", snippet: "" },
    ]);
    expect(citationsOf("calculator", { result: "2" })).toEqual([]);
  });
});
