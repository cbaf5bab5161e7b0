import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { HaloData, SessionState } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce } from "./harness.js";

// Hybrid retrieval end to end: a coordinator and the retriever, each its own OS process, the
// retriever embedding its corpus and the query at the scripted server's /v1/embeddings (where
// "automobile" and "motor" embed as "car" and "engine") and answering halo's rag from the passage
// found by meaning, with the scripted model, cited.

const QUESTION = "How should I look after an automobile motor?";
const ANSWER = "Change the engine oil every year.";

function halo(state: SessionState): HaloData {
  if (state.data.workflow !== "halo") throw new Error(`expected a halo session, got ${state.data.workflow}`);
  return state.data;
}

describe("halo's rag with an embeddings endpoint, the retriever its own process", () => {
  let cluster: Cluster;
  let llm: ScriptedServer;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "e2e-rag-corpus-"));
    writeFileSync(join(dir, "garage.md"), "# Garage\n\nCar engine maintenance: change the oil every year.");
    writeFileSync(join(dir, "kitchen.md"), "# Kitchen\n\nBake bread with flour, water and salt.");
    writeFileSync(join(dir, "garden.md"), "# Garden\n\nWater tomatoes in the morning.");
    llm = await startScriptedOpenAIServer({
      script: [{ role: "retriever", op: "answer", output: { answer: ANSWER } }],
      embeddings: { synonyms: { automobile: "car", motor: "engine" } },
    });
    cluster = new Cluster({
      natsUrl: inject("natsUrl"),
      redisUrl: inject("redisUrl"),
      prefix: uniquePrefix("rag"),
      llmBaseUrl: llm.url,
      extraEnv: { AGENTMESH_CORPUS_DIR: dir, AGENTMESH_EMBEDDINGS_BASE_URL: llm.url },
    });
    await cluster.open();
    cluster.start("coordinator");
    await cluster.waitReady({ coordinator: 1 }, 90_000);
    cluster.start("retriever");
    await cluster.waitReady({ retriever: 1 }, 120_000);
  }, 240_000);

  afterAll(async () => {
    await cluster?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the passage that shares no word with the question is found by its embedding, answered from and cited", async () => {
    const sid = "haloragembed00000001";
    await cluster.submit(QUESTION, sid, { workflow: "halo", options: { capabilities: ["rag"] } });
    const { state, log } = await cluster.waitDone(sid, 60_000);
    assertAppliedOnce(log, state.meta.version);
    const data = halo(state);
    expect(state.meta.status).toBe("completed");
    expect(data.outputs).toMatchObject([{ capability: "rag", status: "answered" }]);
    expect(data.citations.map((c) => c.path)).toEqual(["garage.md"]);
    // the synthesis marks the fragment with its source's number
    expect(data.response_str).toBe("[HALO] Change the engine oil every year [1].\n\nSources:\n1) garage.md");
    // the model was given the passage found by meaning
    const asked = llm.calls.filter((c) => c.role === "retriever" && c.op === "answer");
    expect(asked).toHaveLength(1);
    expect(JSON.stringify(asked[0]?.body)).toContain("Car engine maintenance");
    // the corpus's 3 passages embedded once (at start), and the question's keywords once
    const sizes = llm.embeddingCalls.map((c) => c.inputs.length);
    expect(sizes.filter((n) => n === 3)).toHaveLength(1);
    expect(llm.embeddingCalls.every((c) => c.model === "text-embedding-3-small" && c.status === 200)).toBe(true);
    llm.assertConsumed();
  });
});
