// The RAG strategy end to end inside the executor role: corpus_search over a real corpus in its
// worker, the embeddings and the answer from the scripted OpenAI-compatible server through the
// real `openai` client, the op run as the agent runs it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import type { OpRequest, StepResult } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { offlineModelOf, scriptedHttpModel } from "../../test/setup/model.js";
import { executorAgent } from "./role.js";
import { createExecutorTools, type ExecutorTools } from "./tools.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const SYNONYMS = { automobile: "car", motor: "engine", upkeep: "maintenance" };
const MODEL = { roles: {}, defaultRole: { model: "m", temperature: 0, tier: "standard" as const } };

let dir: string;
const open: Array<() => Promise<void>> = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "rag-corpus-"));
  writeFileSync(join(dir, "garage.md"), "# Garage\n\nCar engine maintenance: change the oil every year.");
  writeFileSync(join(dir, "kitchen.md"), "# Kitchen\n\nBake bread with flour, water and salt.");
  writeFileSync(join(dir, "garden.md"), "# Garden\n\nWater tomatoes in the morning.");
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = { fileRoots: [], webSearch: null, images: null, testTools: false, mcpServers: [] };
async function toolsWith(embeddingsUrl: string | null): Promise<ExecutorTools> {
  const embeddings = embeddingsUrl
    ? { baseUrl: embeddingsUrl, apiKey: undefined, model: "embed-small", cacheDir: undefined }
    : null;
  const tools = await createExecutorTools({ ...base, corpusDir: dir, embeddings }, log);
  open.push(() => tools.close());
  return tools;
}

const ragStep = (query: string): OpRequest<"executor", "execute"> => ({
  question: "How do I look after my automobile's motor?",
  step_index: 0,
  step: { description: "Find how to maintain a car engine", tool: "corpus_search", args: [], expected_outcome: "" },
  strategy: "rag",
  query,
  limits: { max_attempts: 3, timeout_ms: 5000 },
  policy: { listed: ["corpus_search"], banned: [] },
  context: null,
});
let n = 0;
async function run(tools: ExecutorTools, model: Parameters<typeof createOpRunner>[1], input: unknown) {
  const task = {
    task_id: `sessragh0001.${++n}.0.0`,
    session_id: "sessragh0001",
    role: "executor",
    op: "execute",
    attempt: 0,
    input,
  };
  const outcome = await createOpRunner(executorAgent(tools), model, { log, prompts })(
    task,
    new AbortController().signal,
  );
  if (!outcome.ok) throw new Error(`the step failed: ${outcome.error.message}`);
  return outcome.output as StepResult;
}

describe("the blackboard's RAG strategy in the executor", () => {
  it("finds a passage sharing no word with the query only with embeddings, and the model answers from it with its citation", async () => {
    const answer = "Change the engine oil every year [1].";
    const { model, server } = await scriptedHttpModel(
      [{ role: "executor", op: "execute", output: { answer } }],
      MODEL,
      {
        embeddings: { synonyms: SYNONYMS },
      },
    );
    open.push(() => server.close());
    const out = await run(await toolsWith(server.url), model, ragStep("automobile motor upkeep"));
    expect(out).toMatchObject({ ok: true, strategy: "rag", tool: "corpus_search" });
    expect(out.output).toBe(
      `${answer}\n\nSources: [1] garage.md#1\nPassages ranked hybrid: BM25 and embedding similarity, fused by reciprocal rank.`,
    );
    expect(out.citations).toEqual([
      { path: "garage.md", passage: "# Garage Car engine maintenance: change the oil every year." },
    ]);
    // the model was shown the passage found by meaning, numbered, with its id
    const chat = server.calls.filter((c) => c.role === "executor" && c.op === "execute");
    expect(chat).toHaveLength(1);
    expect(JSON.stringify(chat[0]?.body)).toContain("[1] garage.md#1");
    // the corpus's 3 passages in one request (at start), then the query
    expect(server.embeddingCalls.map((c) => c.inputs.length).sort()).toEqual([1, 3]);
    server.assertConsumed();

    // BM25 alone finds nothing for these words, and says so; no model call is made on nothing
    const { model: idle, server: quiet } = await scriptedHttpModel([], MODEL);
    open.push(() => quiet.close());
    const bm25 = await run(await toolsWith(null), idle, ragStep("automobile motor upkeep"));
    expect(bm25.output).toBe(
      "The corpus has no passage on this. Passages ranked by BM25 only: no embeddings endpoint is configured.",
    );
    expect(quiet.calls).toEqual([]);
  }, 30_000);

  it("offline: keeps the passages as retrieved, cited, and says no answer was generated and that they are BM25 only", async () => {
    const tools = await toolsWith(null);
    const out = await run(tools, offlineModelOf([executorAgent(tools)]), ragStep("engine oil"));
    expect(out.output).toBe(
      "[1] garage.md: # Garage Car engine maintenance: change the oil every year.\n" +
        "Passages ranked by BM25 only: no embeddings endpoint is configured. " +
        "No language model is configured, so no answer was generated: these are the passages as retrieved.",
    );
    expect(out.citations.map((c) => c.path)).toEqual(["garage.md"]);
  }, 30_000);
});
