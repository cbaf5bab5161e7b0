import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOpRunner } from "@agentmesh/agent-kit";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel } from "../../test/setup/model.js";
import { executorAgent } from "./role.js";
import { createExecutorTools, type ExecutorTools } from "./tools.js";

// The session's tool-call cap is the coordinator's count, carried by each task as an allowance:
// two executor replicas (each with its own memory) and a third started after one of them stops
// (a restart) all refuse a task whose allowance is used up, and run one that has some left.

const log = createLogger({ service: "test", level: "silent" });
let dir: string;
const replicas: ExecutorTools[] = [];
const make = async () => {
  const tools = await createExecutorTools(
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
  replicas.push(tools);
  return tools;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "exec-allowance-"));
  writeFileSync(join(dir, "nats.md"), "# NATS\n\nJetStream redelivers what a consumer did not acknowledge.");
}, 60_000);
afterAll(async () => {
  for (const r of replicas) await r.close();
  rmSync(dir, { recursive: true, force: true });
});

const SID = "sessallow0001";
/** One executor.call task of the session, with what the coordinator says is left. */
const task = (n: number, toolCallsLeft: number | undefined) => ({
  task_id: `${SID}.${n + 1}.0.0`,
  session_id: SID,
  role: "executor",
  op: "call",
  attempt: 0,
  ...(toolCallsLeft === undefined ? {} : { allowance: { tool_calls: toolCallsLeft } }),
  input: {
    tool: "corpus_search",
    arguments: { query: "JetStream redelivery" },
    allowed: ["corpus_search"],
    limits: { max_attempts: 1, timeout_ms: 5000 },
  },
});
const run = (tools: ExecutorTools, n: number, left: number | undefined) =>
  createOpRunner(executorAgent(tools), createScriptedModel([]), { log })(task(n, left), new AbortController().signal);

describe("executor: the per-session tool-call cap is the coordinator's allowance", () => {
  it("two replicas and a restart: a cap of 3 allows exactly 3 calls, wherever each task lands", async () => {
    const a = await make();
    const b = await make();
    // the coordinator's count for a cap of 3: each dispatched call gets 3 - (calls before it)
    const allowances = [3, 2, 1, 0, 0, 0];
    const outcomes = [];
    outcomes.push(await run(a, 0, allowances[0]));
    outcomes.push(await run(b, 1, allowances[1]));
    // replica a stops; c starts with an empty memory
    await a.close();
    replicas.splice(replicas.indexOf(a), 1);
    const c = await make();
    outcomes.push(await run(c, 2, allowances[2]));
    outcomes.push(await run(c, 3, allowances[3]));
    outcomes.push(await run(b, 4, allowances[4]));
    outcomes.push(await run(c, 5, allowances[5]));
    const oks = outcomes.map((o) => (o.ok ? (o.output as { ok: boolean }).ok : null));
    expect(oks).toEqual([true, true, true, false, false, false]);
    for (const o of outcomes.slice(3))
      expect(o).toMatchObject({ ok: true, output: { ok: false, error: { code: "budget_exceeded" } } });
  });

  it("a task with tool calls left runs on a fresh replica even after many calls of the session elsewhere", async () => {
    const busy = await make();
    for (let n = 0; n < 5; n++) expect((await run(busy, 10 + n, 100 - n)).ok).toBe(true);
    const fresh = await make();
    expect(await run(fresh, 20, 1)).toMatchObject({ ok: true, output: { ok: true } });
    expect(await run(fresh, 21, 0)).toMatchObject({
      ok: true,
      output: { ok: false, error: { code: "budget_exceeded" } },
    });
  });
});
