import { describe, expect, it } from "vitest";
import { AgentmeshError, type OpRequest } from "@agentmesh/contracts";
import type { HandlerContext } from "@agentmesh/agent-kit";
import { RAG_OFFLINE_NOTE, ragOutput, referencedPassages, renderRagPrompt, type RagSearch } from "./rag.js";

const req: OpRequest<"executor", "execute"> = {
  question: "How often should the oil of a car be changed?",
  step_index: 0,
  step: { description: "Look up oil change intervals", tool: "corpus_search", args: [], expected_outcome: "" },
  strategy: "rag",
  query: "oil change interval",
  limits: { max_attempts: 3, timeout_ms: 5000 },
  policy: { listed: [], banned: [] },
  context: null,
};
const search: RagSearch = {
  results: [
    { id: "garage.md#1", path: "garage.md", passage: "Change the engine oil every year." },
    { id: "kitchen.md#2", path: "kitchen.md", passage: "Bake bread with flour." },
    { id: "garage.md#4", path: "garage.md", passage: "Synthetic oil lasts longer." },
  ],
  ranking: "hybrid",
  ranking_note: "",
};
const signal = new AbortController().signal;
const answering = (answer: string) => {
  const prompts: string[] = [];
  const complete: HandlerContext["complete"] = (call) => (
    prompts.push(call.prompt),
    Promise.resolve(call.schema.parse({ answer }))
  );
  return { prompts, complete };
};
const failing =
  (err: Error): HandlerContext["complete"] =>
  () =>
    Promise.reject(err);

describe("the RAG strategy's answer", () => {
  it("reads the passage numbers an answer references, each once, in order, ignoring numbers it was not given", () => {
    expect(referencedPassages("Yearly [3], or [1, 3]; see [9] and [2][1].", 3)).toEqual([3, 1, 2]);
    expect(referencedPassages("No references here.", 3)).toEqual([]);
  });

  it("with a model: the answer from the numbered passages, the ids it references as sources, and those passages cited", async () => {
    const model = answering("Change it every year [1]; synthetic oil lasts longer [3].");
    const out = await ragOutput(req, search, { complete: model.complete, signal });
    expect(model.prompts[0]).toBe(renderRagPrompt(req, search.results));
    expect(model.prompts[0]).toContain("[2] kitchen.md#2\nBake bread with flour.");
    expect(out.text).toBe(
      "Change it every year [1]; synthetic oil lasts longer [3].\n\nSources: [1] garage.md#1, [3] garage.md#4\n" +
        "Passages ranked hybrid: BM25 and embedding similarity, fused by reciprocal rank.",
    );
    expect(out.citations).toEqual([
      { path: "garage.md", passage: "Change the engine oil every year." },
      { path: "garage.md", passage: "Synthetic oil lasts longer." },
    ]);
  });

  it("cites every passage given when the answer references none", async () => {
    const out = await ragOutput(req, search, { complete: answering("Every year.").complete, signal });
    expect(out.citations).toHaveLength(3);
    expect(out.text).toContain("Sources: [1] garage.md#1, [2] kitchen.md#2, [3] garage.md#4");
  });

  it("offline (needs_model): the passages as retrieved, all cited, saying that no answer was generated and how they were ranked", async () => {
    const bm25: RagSearch = {
      ...search,
      ranking: "bm25",
      ranking_note: "BM25 only: no embeddings endpoint is configured",
    };
    const out = await ragOutput(req, bm25, {
      complete: failing(new AgentmeshError("needs_model", "no model")),
      signal,
    });
    expect(out.text).toBe(
      "[1] garage.md: Change the engine oil every year.\n[2] kitchen.md: Bake bread with flour.\n[3] garage.md: Synthetic oil lasts longer.\n" +
        `Passages ranked by BM25 only: no embeddings endpoint is configured. ${RAG_OFFLINE_NOTE}`,
    );
    expect(out.citations).toHaveLength(3);
  });

  it("keeps the passages, naming the failure, when the model fails; a cancelled task still fails", async () => {
    const out = await ragOutput(req, search, {
      complete: failing(new AgentmeshError("model_invalid_output", "not JSON")),
      signal,
    });
    expect(out.text).toContain("The model could not write an answer (model_invalid_output): not JSON");
    expect(out.text.startsWith("[1] garage.md: Change the engine oil every year.")).toBe(true);
    const aborted = new AbortController();
    aborted.abort();
    await expect(
      ragOutput(req, search, { complete: failing(new AgentmeshError("cancelled", "stop")), signal: aborted.signal }),
    ).rejects.toThrow("stop");
  });

  it("says the corpus has nothing, without a model call, when no passage was found", async () => {
    const model = answering("unused");
    const out = await ragOutput(req, { results: [], ranking: "hybrid" }, { complete: model.complete, signal });
    expect(out).toEqual({
      text: "The corpus has no passage on this. Passages ranked hybrid: BM25 and embedding similarity, fused by reciprocal rank.",
      citations: [],
    });
    expect(model.prompts).toEqual([]);
  });
});
