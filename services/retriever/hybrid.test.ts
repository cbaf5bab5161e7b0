// The retriever's corpus search with and without an embeddings endpoint: its own corpus_search
// (worker), the scripted server's /v1/embeddings and chat completions through the real client,
// each op run as the agent runs it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts, type AgentSetup } from "@agentmesh/agent-kit";
import { EMPTY_MEMORY, type RetrievalBundle, type SpecialistAnswer } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { scriptedHttpModel } from "../../test/setup/model.js";
import { loadRetrieverConfig } from "./config.js";
import { createRetriever } from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const MODEL = { roles: {}, defaultRole: { model: "m", temperature: 0, tier: "standard" as const } };
const QUESTION = "How should I look after an automobile motor?";

let dir: string;
const open: Array<() => Promise<void>> = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "retriever-hybrid-"));
  writeFileSync(join(dir, "garage.md"), "# Garage\n\nCar engine maintenance: change the oil every year.");
  writeFileSync(join(dir, "kitchen.md"), "# Kitchen\n\nBake bread with flour, water and salt.");
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function retriever(embeddingsUrl: string | null): Promise<AgentSetup> {
  const env = {
    AGENTMESH_CORPUS_DIR: dir,
    ...(embeddingsUrl
      ? { AGENTMESH_EMBEDDINGS_BASE_URL: embeddingsUrl, AGENTMESH_EMBEDDINGS_MODEL: "embed-small" }
      : {}),
  };
  const setup = await createRetriever(loadRetrieverConfig(env), log);
  open.push(async () => setup.close?.());
  return setup;
}
let n = 0;
async function run(setup: AgentSetup, model: Parameters<typeof createOpRunner>[1], op: string, input: unknown) {
  const [agent] = setup.agents;
  if (!agent) throw new Error("no retriever agent");
  const task = {
    task_id: `sessretr0001.${++n}.0.0`,
    session_id: "sessretr0001",
    role: "retriever",
    op,
    attempt: 0,
    input,
  };
  const outcome = await createOpRunner(agent, model, { log, prompts })(task, new AbortController().signal);
  if (!outcome.ok) throw new Error(`${op} failed: ${outcome.error.message}`);
  return outcome.output;
}
const retrieveInput = { query: QUESTION, strategies: ["corpus"], memory: EMPTY_MEMORY, max_items: 20 };

describe("the retriever with an embeddings endpoint", () => {
  it("halo's rag and the blackboard's retrieval find by meaning what BM25 misses, and say how they ranked", async () => {
    const answer = "Change the engine oil every year.";
    const { model, server } = await scriptedHttpModel(
      [{ role: "retriever", op: "answer", output: { answer } }],
      MODEL,
      { embeddings: { synonyms: { automobile: "car", motor: "engine" } } },
    );
    open.push(() => server.close());
    const setup = await retriever(server.url);

    const rag = (await run(setup, model, "answer", { question: QUESTION, source: "corpus" })) as SpecialistAnswer;
    expect(rag.response_str).toBe(answer);
    expect(rag.citations.map((c) => c.path)).toEqual(["garage.md"]);
    expect(JSON.stringify(server.calls[0]?.body)).toContain("Car engine maintenance");

    const bundle = (await run(setup, model, "retrieve", retrieveInput)) as RetrievalBundle;
    expect(bundle.corpus_ranking).toEqual({ method: "hybrid", note: "" });
    expect(bundle.items[0]).toMatchObject({ source: "corpus", citation: { path: "garage.md" } });
    expect(bundle.items[0]?.relevance).toBeGreaterThan(0.4);
    // the corpus embedded once (its 2 passages, at start), and the one query once
    expect(server.embeddingCalls.map((c) => c.inputs.length).sort()).toEqual([1, 2]);
    server.assertConsumed();
  }, 30_000);

  it("without one: BM25 only, said in the bundle, and halo's rag finds nothing for these words", async () => {
    const { model, server } = await scriptedHttpModel([], MODEL);
    open.push(() => server.close());
    const setup = await retriever(null);
    const bundle = (await run(setup, model, "retrieve", retrieveInput)) as RetrievalBundle;
    expect(bundle.corpus_ranking).toEqual({ method: "bm25", note: "BM25 only: no embeddings endpoint is configured" });
    expect(bundle.items).toEqual([]);
    const rag = (await run(setup, model, "answer", { question: QUESTION, source: "corpus" })) as SpecialistAnswer;
    expect(rag).toEqual({ response_str: "The document corpus has nothing on this.", citations: [] });
    expect(server.calls).toEqual([]);
  }, 30_000);
});
