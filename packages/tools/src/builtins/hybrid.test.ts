import { describe, expect, it } from "vitest";
import { cosineTop, FUSION_DEPTH, fuseRankings, normalize, RRF_K } from "./hybrid.mjs";

describe("reciprocal rank fusion", () => {
  it("scores an id 1/(60+rank) per list that holds it, summed, best first", () => {
    const fused = fuseRankings([
      [10, 20, 30],
      [30, 40],
    ]);
    expect(RRF_K).toBe(60);
    // 20 and 40 tie at 1/62: 20 is ranked in the first list
    expect(fused.map((f) => f.id)).toEqual([30, 10, 20, 40]);
    expect(fused[0]).toEqual({ id: 30, score: 1 / 63 + 1 / 61, ranks: [3, 1] });
    expect(fused[1]).toEqual({ id: 10, score: 1 / 61, ranks: [1, null] });
    expect(fused[2]).toEqual({ id: 20, score: 1 / 62, ranks: [2, null] });
    expect(fused[3]).toEqual({ id: 40, score: 1 / 62, ranks: [null, 2] });
  });

  it("breaks a tie by the earliest list's rank, so BM25's first beats the vectors' first", () => {
    expect(fuseRankings([[1], [2]]).map((f) => f.id)).toEqual([1, 2]);
    expect(fuseRankings([[2], [1]]).map((f) => f.id)).toEqual([2, 1]);
  });

  it("counts an id once per list even when a list repeats it, and takes another k", () => {
    const [only] = fuseRankings([[7, 7]], 0);
    expect(only).toEqual({ id: 7, score: 1, ranks: [1] });
  });
});

describe("exact cosine", () => {
  it("normalizes to unit length and leaves a zero vector zero", () => {
    const v = normalize([3, 4]);
    expect(Array.from(v)).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(Array.from(normalize([0, 0]))).toEqual([0, 0]);
  });

  it("ranks every row by its dot product with the unit query, positive ones only, at most `depth`", () => {
    const rows = [normalize([1, 0]), normalize([1, 1]), normalize([0, 1]), normalize([-1, 0])];
    const matrix = new Float32Array(rows.flatMap((r) => Array.from(r)));
    const hits = cosineTop(matrix, 2, normalize([1, 0.2]), FUSION_DEPTH);
    expect(hits.map((h) => h.row)).toEqual([0, 1, 2]);
    expect(hits[0]?.cosine).toBeCloseTo(1 / Math.hypot(1, 0.2), 5);
    expect(cosineTop(matrix, 2, normalize([1, 0.2]), 1).map((h) => h.row)).toEqual([0]);
  });
});
