/**
 * Halo's specialists as an agent process runs them: each role folder built from its environment
 * (`setUpRole`), its op run by the op runner with the offline engine (the roles' own offline
 * behaviours injected) or a scripted model, the output checked against the registry's schema.
 * graph over a temp triples file, retriever.answer over a temp corpus, mcp over the stdio test server.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROLES, type RoleName, type TaskOutcome } from "@agentmesh/contracts";
import { loadRoles } from "@agentmesh/agent";
import {
  createOpRunner,
  loadPromptContracts,
  offlineHandlersOf,
  setUpRole,
  type AgentSetup,
} from "@agentmesh/agent-kit";
import { createOfflineModel, type ModelPort } from "@agentmesh/llm";
import { createScriptedModel } from "@agentmesh/llm/testing";
import { createLogger } from "@agentmesh/service-kit";
import { stdioTestServer } from "@agentmesh/tools/testing";

const log = createLogger({ service: "halo-specialists", level: "silent" });
const root = mkdtempSync(join(tmpdir(), "halo-specialists-"));
const setups: AgentSetup[] = [];
let offline: ModelPort;
let run: (role: RoleName, op: string, input: unknown, model?: ModelPort) => Promise<TaskOutcome>;

beforeAll(async () => {
  mkdirSync(join(root, "corpus"));
  writeFileSync(
    join(root, "corpus", "redis.md"),
    "# Redis\n\nWith the append-only file enabled, Redis logs every write command to disk.\n",
  );
  writeFileSync(
    join(root, "graph.jsonl"),
    [
      {
        subject: "trastuzumab",
        predicate: "targets",
        object: "the HER2 receptor",
        source: "https://drugs.example/trastuzumab",
      },
      { subject: "pertuzumab", predicate: "is combined with", object: "trastuzumab", source: "notes/her2.md:12" },
    ]
      .map((t) => JSON.stringify(t))
      .join("\n"),
  );
  const stdio = stdioTestServer("biomcp");
  if (stdio.transport !== "stdio") throw new Error("expected the stdio test server");
  const env = {
    AGENTMESH_GRAPH_PATH: join(root, "graph.jsonl"),
    AGENTMESH_CORPUS_DIR: join(root, "corpus"),
    AGENTMESH_MCP_SERVERS: JSON.stringify({
      biomcp: { command: stdio.command, args: stdio.args, allow: { mcp: "*" } },
    }),
  };
  const roles = await loadRoles(["graph", "retriever", "mcp"]);
  for (const r of roles) setups.push(await setUpRole(r.module, env, log));
  const defs = setups.flatMap((s) => s.agents);
  const prompts = loadPromptContracts({ builtinDirs: roles.map((r) => r.dir) });
  offline = createOfflineModel({ handlers: offlineHandlersOf(defs) });
  run = (role, op, input, model = offline) => {
    const def = defs.find((d) => d.role === role);
    if (!def) throw new Error(`no ${role}`);
    return createOpRunner(def, model, { log, prompts })(
      { task_id: "s1.1.0.0", session_id: "s1", role, op, attempt: 1, input },
      AbortSignal.timeout(20_000),
    );
  };
}, 60_000);

afterAll(async () => {
  await Promise.all(setups.map((s) => s.close?.()));
  rmSync(root, { recursive: true, force: true });
});

/** The op's output, checked against its registry schema; fails the test on a failed outcome. */
function answered(outcome: TaskOutcome, role: "graph" | "retriever" | "mcp") {
  if (!outcome.ok) throw new Error(`${role} failed: ${outcome.error.code}: ${outcome.error.message}`);
  return ROLES[role].answer.response.parse(outcome.output);
}

describe("halo's specialists through the op runner", () => {
  it("graph, offline engine: the triples found as sentences, each cited by its source", async () => {
    const out = answered(await run("graph", "answer", { question: "What does trastuzumab target?" }), "graph");
    expect(out.response_str).toContain("Trastuzumab targets the HER2 receptor.");
    expect(out.citations).toContainEqual({
      title: "trastuzumab",
      url: "https://drugs.example/trastuzumab",
      path: null,
      snippet: "Trastuzumab targets the HER2 receptor.",
    });
  });

  it("graph, scripted model: the model's prose, the triples' citations, one model call", async () => {
    const model = createScriptedModel([{ role: "graph", op: "answer", output: { answer: "It targets HER2." } }]);
    const outcome = await run("graph", "answer", { question: "What does trastuzumab target?" }, model);
    const out = answered(outcome, "graph");
    expect(out.response_str).toBe("It targets HER2.");
    expect(out.citations.map((c) => c.url ?? c.path)).toContain("https://drugs.example/trastuzumab");
    model.assertConsumed();
    expect(outcome.provenance?.prompt_version).toBe("graph.answer/v1");
  });

  it("retriever.answer from the corpus, offline engine: extractive, cited by passage", async () => {
    const out = answered(
      await run("retriever", "answer", {
        question: "How does Redis log writes with the append-only file?",
        source: "corpus",
      }),
      "retriever",
    );
    expect(out.response_str).toBe("With the append-only file enabled, Redis logs every write command to disk.");
    expect(out.citations).toHaveLength(1);
    expect(out.citations[0]).toMatchObject({ title: "redis.md", url: null, path: "redis.md" });
  });

  it("retriever.answer from the web without a key: tool_unavailable, not retryable", async () => {
    const outcome = await run("retriever", "answer", { question: "What is the weather?", source: "web" });
    expect(outcome).toMatchObject({ ok: false, error: { code: "tool_unavailable", retryable: false } });
  });

  it("mcp, offline engine: the server's best-fitting tool, its links and resources as citations", async () => {
    const out = answered(
      await run("mcp", "answer", { question: "Search published articles about HER2", server: "biomcp" }),
      "mcp",
    );
    expect(out.response_str).toBe('Two articles match "Search published articles about HER2".');
    expect(out.citations.map((c) => c.url ?? c.path)).toEqual([
      "https://articles.example/a/1",
      "/data/articles/2.txt",
      "https://articles.example/a/3",
    ]);
  });

  it("mcp, a server that is not configured: tool_unavailable naming it", async () => {
    const outcome = await run("mcp", "answer", { question: "Search articles", server: "llama_mcp" });
    expect(outcome).toMatchObject({ ok: false, error: { code: "tool_unavailable", retryable: false } });
    expect(outcome.ok ? "" : outcome.error.message).toContain('"llama_mcp" is not configured');
  });
});

describe("retriever.answer without a corpus", () => {
  it("fails tool_unavailable, not retryable: RAG is optional, skipped cleanly", async () => {
    const [retriever] = await loadRoles(["retriever"]);
    const setup = await setUpRole(retriever!.module, { AGENTMESH_CORPUS_DIR: join(root, "no-corpus") }, log);
    try {
      const prompts = loadPromptContracts({ builtinDirs: [retriever!.dir] });
      const outcome = await createOpRunner(setup.agents[0]!, offline, { log, prompts })(
        {
          task_id: "s2.1.0.0",
          session_id: "s2",
          role: "retriever",
          op: "answer",
          attempt: 1,
          input: { question: "How does Redis persist data?", source: "corpus" },
        },
        AbortSignal.timeout(10_000),
      );
      expect(outcome).toMatchObject({
        ok: false,
        error: {
          code: "tool_unavailable",
          retryable: false,
          message: expect.stringContaining("no corpus is configured") as unknown,
        },
      });
    } finally {
      await setup.close?.();
    }
  });
});
