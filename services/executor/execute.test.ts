import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROLES, type OpRequest, type PlanStep } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { argsObject, executeStep, listTools } from "./execute.js";
import { createExecutorTools, type ExecutorTools } from "./tools.js";

const log = createLogger({ service: "test", level: "silent" });
let dir: string;
let tools: ExecutorTools;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "exec-corpus-"));
  writeFileSync(
    join(dir, "redis.md"),
    "# Redis\n\nWith the append-only file enabled, Redis logs every write command to a file.",
  );
  tools = await createExecutorTools(
    { corpusDir: dir, fileRoots: [], webSearch: null, images: null, embeddings: null, testTools: true, mcpServers: [] },
    log,
  );
  // The calculator's worker loads mathjs first (seconds on a busy machine, over a call's 5 s, and a
  // call that times out kills the loading worker): warm it through the tool itself, without a deadline.
  const calculator = tools.registry.get("calculator");
  if (!calculator) throw new Error("the executor has no calculator");
  await calculator.execute(
    { expression: "[1]" },
    {
      signal: new AbortController().signal,
      sessionId: "warm",
      taskId: "t",
      attempt: 1,
      deadline: Date.now() + 60_000,
      idempotencyKey: undefined,
    },
  );
}, 90_000);
afterAll(async () => {
  await tools?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every tool the executor lists here: what the planner of these requests was shown. */
const LISTED = ["calculator", "corpus_search", "run_js", "run_python", "test_flaky", "test_slow", "web_search"];
const ctx = () => ({
  sessionId: `s${Math.random().toString(36).slice(2, 10)}`,
  taskId: "t.1.0.0",
  signal: new AbortController().signal,
});
const step = (tool: string, args: PlanStep["args"]): PlanStep => ({
  description: `Run ${tool} now`,
  tool,
  args,
  expected_outcome: "",
});
const request = (
  s: PlanStep,
  over: Partial<OpRequest<"executor", "execute">> = {},
): OpRequest<"executor", "execute"> => ({
  question: "What is asked?",
  step_index: 0,
  step: s,
  strategy: "tool",
  query: null,
  limits: { max_attempts: 3, timeout_ms: 5000 },
  policy: { listed: LISTED, banned: [] },
  context: null,
  ...over,
});
const run = (req: OpRequest<"executor", "execute">) => executeStep(req, (c) => tools.call(c), ctx());

describe("executor.execute (tool strategies)", () => {
  it("runs the step's tool with its named arguments and states the value", async () => {
    const r = await run(request(step("calculator", [{ name: "expression", value: "123456789 * 987654321" }])));
    expect(r).toMatchObject({
      ok: true,
      tool: "calculator",
      output: "121932631112635269",
      attempts: 1,
      records: [{ tool: "calculator", outcome: "ok", attempt: 1 }],
    });
    expect(r.records[0]?.args_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(ROLES.executor.execute.response.safeParse(r).success).toBe(true);
  }, 30_000);

  it("records every attempt of a flaky tool: two failures, then success", async () => {
    const r = await run(request(step("test_flaky", [{ name: "text", value: "hello" }])));
    expect(r).toMatchObject({ ok: true, output: '{"echo":"hello"}', attempts: 3 });
    expect(r.records.map((x) => `${x.attempt}:${x.outcome}`)).toEqual(["1:tool_error", "2:tool_error", "3:ok"]);
  });

  it("turns a tool that times out on every attempt into an ok:false result, not a task failure", async () => {
    const r = await run(request(step("test_slow", [{ name: "text", value: "ping" }])));
    expect(r).toMatchObject({ ok: false, output: null, error: { code: "timeout", retryable: true }, attempts: 3 });
    expect(r.records.map((x) => `${x.attempt}:${x.outcome}`)).toEqual(["1:timeout", "2:timeout", "3:timeout"]);
    expect(ROLES.executor.execute.response.safeParse(r).success).toBe(true);
  });

  it("applies the step's limits: fewer attempts than the tool allows", async () => {
    const r = await run(
      request(step("test_flaky", [{ name: "text", value: "x" }]), { limits: { max_attempts: 2, timeout_ms: 3000 } }),
    );
    expect(r).toMatchObject({ ok: false, error: { code: "tool_error" }, attempts: 2 });
  });

  it("refuses unknown tools and bad arguments before any attempt (attempt 0)", async () => {
    expect(await run(request(step("no_such_tool", [])))).toMatchObject({
      ok: false,
      error: { code: "tool_not_found" },
      attempts: 0,
      records: [{ attempt: 0 }],
    });
    expect(await run(request(step("calculator", [{ name: "expr", value: "1+1" }])))).toMatchObject({
      ok: false,
      error: { code: "invalid_tool_input" },
      attempts: 0,
    });
  });

  it("rag searches the corpus with the strategy query and returns citations; web without a provider fails typed", async () => {
    const rag = await run(request(step("calculator", []), { strategy: "rag", query: "redis append-only file" }));
    expect(rag).toMatchObject({ ok: true, tool: "corpus_search", citations: [{ path: "redis.md" }] });
    expect(rag.output).toContain("[1] redis.md: # Redis With the append-only file enabled");
    const web = await run(request(step("calculator", []), { strategy: "web", query: "redis" }));
    expect(web).toMatchObject({ ok: false, tool: "web_search", error: { code: "tool_unavailable", retryable: false } });
  }, 30_000);

  it("refuses a banned tool and a tool the planner was not shown before any attempt, typed and not retryable", async () => {
    const calc = step("calculator", [{ name: "expression", value: "1 + 1" }]);
    const banned = await run(request(calc, { policy: { listed: LISTED, banned: ["calculator"] } }));
    expect(banned).toMatchObject({
      ok: false,
      tool: "calculator",
      error: { code: "permission_denied", retryable: false },
      attempts: 0,
      records: [{ attempt: 0, outcome: "permission_denied" }],
    });
    expect(banned.error?.message).toContain("banned");
    const unlisted = await run(
      request(step("test_flaky", [{ name: "text", value: "x" }]), { policy: { listed: ["calculator"], banned: [] } }),
    );
    expect(unlisted).toMatchObject({ ok: false, error: { code: "permission_denied", retryable: false }, attempts: 0 });
    expect(unlisted.error?.message).toContain("not among the tools");
    // a list_tools that failed leaves the planner with nothing: no tool of its choosing runs
    expect(await run(request(calc, { policy: { listed: [], banned: [] } }))).toMatchObject({
      ok: false,
      error: { code: "permission_denied" },
      attempts: 0,
    });
    // rag and web are the workflow's own strategies: only a ban stops them
    expect(
      await run(
        request(calc, { strategy: "rag", query: "redis append-only file", policy: { listed: [], banned: [] } }),
      ),
    ).toMatchObject({ ok: true, tool: "corpus_search" });
    expect(
      await run(
        request(calc, {
          strategy: "rag",
          query: "redis append-only file",
          policy: { listed: LISTED, banned: ["corpus_search"] },
        }),
      ),
    ).toMatchObject({
      ok: false,
      tool: "corpus_search",
      error: { code: "permission_denied" },
      attempts: 0,
    });
    expect(ROLES.executor.execute.response.safeParse(banned).success).toBe(true);
  }, 30_000);

  it("records the dangerous-pattern flags of the arguments in every tool performance record", async () => {
    const r = await run(request(step("test_flaky", [{ name: "text", value: "import os; os.system('rm -rf /')" }])));
    expect(r.records).toHaveLength(3);
    for (const rec of r.records) expect(rec.flags).toEqual(["import", "rm_rf", "subprocess"]);
    const refused = await run(
      request(step("test_flaky", [{ name: "text", value: "open('../../etc/passwd')" }]), {
        policy: { listed: LISTED, banned: ["test_flaky"] },
      }),
    );
    expect(refused.records).toEqual([expect.objectContaining({ attempt: 0, flags: ["open", "path_traversal"] })]);
    const clean = await run(request(step("calculator", [{ name: "expression", value: "2 * 3" }])));
    expect(clean.records[0]).not.toHaveProperty("flags");
    expect(ROLES.executor.execute.response.safeParse(r).success).toBe(true);
  }, 30_000);

  it("maps argument pairs to an object, a null value meaning not given", () => {
    expect(
      argsObject([
        { name: "query", value: "x" },
        { name: "limit", value: null },
        { name: "n", value: 2 },
      ]),
    ).toEqual({ query: "x", n: 2 });
  });
});

describe("executor.list_tools", () => {
  it("lists the tools the executor role may call, schemas within 3000 characters", () => {
    const list = listTools(tools.registry, 16);
    expect(list.map((t) => t.name)).toEqual([
      "analyze_image",
      "calculator",
      "corpus_search",
      "generate_image",
      "run_js",
      "run_python",
      "test_flaky",
      "test_slow",
      "web_search",
    ]);
    for (const t of list) expect(JSON.stringify(t.input_schema).length).toBeLessThanOrEqual(3000);
    expect(list[0]?.input_schema).not.toHaveProperty("$schema");
    expect(ROLES.executor.list_tools.response.safeParse({ tools: list }).success).toBe(true);
    expect(listTools(tools.registry, 2)).toHaveLength(2);
  });
});
