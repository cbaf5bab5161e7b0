import { mkdtempSync, readdirSync, rmSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createCorpusEmbeddingCache } from "./corpus-vectors.js";
import { createVectorFiles } from "./vector-files.js";
import type { Embedder } from "./embeddings.js";

/** An embedder that counts its requests: each text becomes [length, 1]. */
function counting(fail = 0): Embedder & { requests: number[]; failLeft: number } {
  const e = {
    model: "m",
    requests: [] as number[],
    failLeft: fail,
    embed(texts: readonly string[]) {
      e.requests.push(texts.length);
      if (e.failLeft > 0) {
        e.failLeft -= 1;
        return Promise.reject(new Error("endpoint down"));
      }
      return Promise.resolve(texts.map((t) => [t.length, 1]));
    },
  };
  return e;
}

const passages = (n: number) => () => Promise.resolve(Array.from({ length: n }, (_, i) => `passage ${i}`));
const signal = new AbortController().signal;

describe("corpus embedding cache", () => {
  it("embeds a corpus version once, in batches; later and concurrent searches reuse it", async () => {
    const e = counting();
    const cache = createCorpusEmbeddingCache(e, { batchSize: 4 });
    const [a, b] = await Promise.all([cache.vectorsFor("v1", passages(10)), cache.vectorsFor("v1", passages(10))]);
    expect(a).toBe(b);
    await cache.vectorsFor("v1", passages(10));
    expect(e.requests).toEqual([4, 4, 2]);
    expect(cache.stats()).toEqual({
      corpusRequests: 3,
      queryRequests: 0,
      versionsEmbedded: 1,
      versionsLoaded: 0,
      saveError: null,
    });
    expect(a).toMatchObject({ version: "v1", model: "m", dim: 2, count: 10 });
    const rows = new Float32Array(a.data);
    expect(rows.length).toBe(20);
    // unit rows: "passage 0" is [9, 1] normalized
    expect(rows[0]).toBeCloseTo(9 / Math.hypot(9, 1), 5);
  });

  it("embeds a new version again, keeps two, and forgets a failed embedding so the next search retries", async () => {
    const e = counting(1);
    const cache = createCorpusEmbeddingCache(e, { batchSize: 100 });
    await expect(cache.vectorsFor("v1", passages(3))).rejects.toThrow("endpoint down");
    await cache.vectorsFor("v1", passages(3));
    await cache.vectorsFor("v2", passages(3));
    await cache.vectorsFor("v3", passages(3));
    await cache.vectorsFor("v3", passages(3));
    await cache.vectorsFor("v2", passages(3));
    expect(e.requests).toEqual([3, 3, 3, 3]);
    await cache.vectorsFor("v1", passages(3));
    expect(e.requests).toHaveLength(5);
  });

  it("asks for a query's vector once while it is among the last 64 queries", async () => {
    const e = counting();
    const cache = createCorpusEmbeddingCache(e);
    const v = await cache.queryVector("abc", signal);
    expect(Array.from(v).map((x) => Math.round(x * 1000) / 1000)).toEqual([0.949, 0.316]);
    await cache.queryVector("abc", signal);
    expect(cache.stats().queryRequests).toBe(1);
  });
});

describe("corpus vectors on disk", () => {
  it("a second process reads the saved version instead of embedding it; a file that does not check out is embedded again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vectors-"));
    try {
      const first = counting();
      const a = await createCorpusEmbeddingCache(first, { files: createVectorFiles(dir) }).vectorsFor(
        "v1",
        passages(5),
      );
      expect(first.requests).toEqual([5]);
      const second = counting();
      const restarted = createCorpusEmbeddingCache(second, { files: createVectorFiles(dir) });
      const b = await restarted.vectorsFor("v1", passages(5));
      expect(second.requests).toEqual([]);
      expect(restarted.stats()).toMatchObject({ versionsLoaded: 1, versionsEmbedded: 0, saveError: null });
      expect(Array.from(new Float32Array(b.data))).toEqual(Array.from(new Float32Array(a.data)));
      expect(b).toMatchObject({ version: "v1", model: "m", dim: 2, count: 5 });
      // cut short: not loaded, embedded again (and saved whole)
      const [file] = readdirSync(dir);
      truncateSync(join(dir, file ?? ""), 20);
      const third = counting();
      await createCorpusEmbeddingCache(third, { files: createVectorFiles(dir) }).vectorsFor("v1", passages(5));
      expect(third.requests).toEqual([5]);
      const fourth = counting();
      await createCorpusEmbeddingCache(fourth, { files: createVectorFiles(dir) }).vectorsFor("v1", passages(5));
      expect(fourth.requests).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
