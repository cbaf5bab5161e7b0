import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createCorpusSearchTool, NO_EMBEDDINGS_NOTE, type CorpusSearch } from "./corpus-search.js";
import type { Embedder } from "./embeddings.js";

// A stand-in for an embeddings model: hashed bag of words where a few words share a meaning.
const SAME = new Map([
  ["automobile", "car"],
  ["motor", "engine"],
  ["upkeep", "maintenance"],
]);
function vectorOf(text: string): number[] {
  const v = new Array<number>(256).fill(0);
  for (const raw of text.toLowerCase().match(/[a-z]{3,}/g) ?? []) {
    const w = SAME.get(raw) ?? raw;
    let h = 2166136261;
    for (const c of w) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
    v[h % 256] = (v[h % 256] ?? 0) + 1;
  }
  return v;
}
function fakeEmbedder(): Embedder & { requests: string[][] } {
  const requests: string[][] = [];
  return {
    model: "bag-of-words",
    requests,
    embed(texts) {
      requests.push([...texts]);
      return Promise.resolve(texts.map(vectorOf));
    },
  };
}

type Result = {
  results: Array<{ id: string; path: string; bm25_rank: number | null; vector_rank: number | null }>;
  ranking: string;
  ranking_note: string;
};

let dir: string;
const opened: CorpusSearch[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "corpus-hybrid-"));
  writeFileSync(join(dir, "garage.md"), "# Garage\n\nCar engine maintenance: change the oil every year.");
  writeFileSync(join(dir, "kitchen.md"), "# Kitchen\n\nBake bread with flour, water and salt.");
  writeFileSync(join(dir, "garden.md"), "# Garden\n\nWater tomatoes in the morning.");
});
afterAll(async () => {
  await Promise.all(opened.map((c) => c.pool.close()));
  rmSync(dir, { recursive: true, force: true });
});

function open(embedder: Embedder | null): CorpusSearch {
  const c = createCorpusSearchTool({ dir, allowedRoles: ["retriever"], embedder, timeoutMs: 20_000 });
  opened.push(c);
  return c;
}
async function search(c: CorpusSearch, query: string): Promise<Result> {
  const r = await createSafeExecutor({ registry: createToolRegistry([c.tool]) }).call({
    tool: "corpus_search",
    args: { query, limit: 3 },
    role: "retriever",
    sessionId: "s",
    taskId: "t",
  });
  if (!r.ok) throw r.error;
  return r.output as Result;
}

describe("corpus_search, hybrid", () => {
  it("finds a passage whose words differ from the query's only with embeddings; BM25 alone says it is BM25 only", async () => {
    const query = "automobile motor upkeep";
    const plain = await search(open(null), query);
    expect(plain).toEqual({ results: [], ranking: "bm25", ranking_note: NO_EMBEDDINGS_NOTE });

    const hybrid = await search(open(fakeEmbedder()), query);
    expect(hybrid.ranking).toBe("hybrid");
    expect(hybrid.ranking_note).toBe("");
    expect(hybrid.results[0]).toMatchObject({ id: "garage.md#1", path: "garage.md", bm25_rank: null, vector_rank: 1 });
  });

  it("fuses both rankings: a passage BM25 finds keeps its BM25 rank beside its vector rank", async () => {
    const r = await search(open(fakeEmbedder()), "tomatoes morning");
    expect(r.results[0]).toMatchObject({ path: "garden.md", bm25_rank: 1, vector_rank: 1 });
  });

  it("embeds the corpus once per corpus version: one request for the passages, then one per new query", async () => {
    const embedder = fakeEmbedder();
    const c = open(embedder);
    await search(c, "automobile");
    await search(c, "bread");
    await search(c, "bread");
    // the 3 passages in one request (beside the first query's), then one per distinct query
    expect(embedder.requests.map((r) => r.length).sort()).toEqual([1, 1, 3]);
    expect(c.embeddingStats()).toMatchObject({ corpusRequests: 1, queryRequests: 2, versionsEmbedded: 1 });
    // a touched but unchanged file keeps the version; a changed one makes a new version
    writeFileSync(join(dir, "garden.md"), "# Garden\n\nWater tomatoes in the morning.");
    await search(c, "bread");
    expect(c.embeddingStats()?.corpusRequests).toBe(1);
    writeFileSync(join(dir, "garden.md"), "# Garden\n\nWater tomatoes in the evening.");
    const after = await search(c, "automobile");
    expect(after.ranking).toBe("hybrid");
    expect(c.embeddingStats()).toMatchObject({ corpusRequests: 2, queryRequests: 2, versionsEmbedded: 2 });
  });

  it("does not hold a search for vectors still being computed: BM25 and saying so, then hybrid once they are in", async () => {
    const inner = fakeEmbedder();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    // the corpus's request (several texts) waits for the gate; a query's goes through
    const slow: Embedder = {
      model: inner.model,
      embed: async (texts, o) => (texts.length > 1 ? gate.then(() => inner.embed(texts, o)) : inner.embed(texts, o)),
    };
    const c = createCorpusSearchTool({ dir, allowedRoles: ["retriever"], embedder: slow, embeddingsWaitMs: 50 });
    opened.push(c);
    const early = await search(c, "tomatoes");
    expect(early.ranking).toBe("bm25");
    expect(early.ranking_note).toBe("BM25 only: the corpus's embeddings are still being computed");
    release();
    await expect.poll(async () => (await search(c, "tomatoes")).ranking).toBe("hybrid");
    expect(c.embeddingStats()?.corpusRequests).toBe(1);
  });

  it("falls back to BM25 and says why when the embeddings endpoint fails, and warms up ahead of the first search", async () => {
    const failing: Embedder = { model: "down", embed: () => Promise.reject(new Error("connection refused")) };
    const r = await search(open(failing), "tomatoes");
    expect(r.ranking).toBe("bm25");
    expect(r.ranking_note).toBe("BM25 only: the embeddings endpoint failed: connection refused");
    expect(r.results[0]?.path).toBe("garden.md");

    const embedder = fakeEmbedder();
    const c = open(embedder);
    expect(await c.warm()).toMatchObject({ ok: true, message: expect.stringMatching(/^3 passages embedded/) });
    expect(c.embeddingStats()?.corpusRequests).toBe(1);
    expect(await open(failing).warm()).toEqual({
      ok: false,
      message: "the corpus could not be embedded: connection refused",
    });
  });
});
