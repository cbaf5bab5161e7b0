// The arithmetic of hybrid corpus search: exact cosine over embedded passages and the fusion of
// the BM25 and vector rankings. Plain JavaScript, so the corpus worker runs it without a
// TypeScript loader; its types are in hybrid.d.mts. docs/retrieval.md states the rule.

/** Reciprocal rank fusion's constant: a passage at rank r of a list adds 1 / (RRF_K + r). */
export const RRF_K = 60;

/** Candidates taken from each ranking before fusion. */
export const FUSION_DEPTH = 50;

/** The vector scaled to length 1 (a zero vector stays zero), as a new Float32Array. */
export function normalize(vector) {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const out = new Float32Array(vector.length);
  if (sum === 0) return out;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) out[i] = vector[i] * inv;
  return out;
}

/**
 * Exact cosine of a unit query against every row of a row-major matrix of unit vectors: the
 * `depth` rows with the highest positive cosine, best first (a tie keeps the lower row first).
 */
export function cosineTop(matrix, dim, query, depth) {
  const rows = Math.floor(matrix.length / dim);
  const scored = [];
  for (let r = 0; r < rows; r++) {
    let dot = 0;
    const base = r * dim;
    for (let i = 0; i < dim; i++) dot += matrix[base + i] * query[i];
    if (dot > 0) scored.push({ row: r, cosine: dot });
  }
  scored.sort((a, b) => b.cosine - a.cosine || a.row - b.row);
  return scored.slice(0, depth);
}

/**
 * Reciprocal rank fusion of rankings (each a list of ids, best first): an id's score is the sum
 * over the lists that hold it of 1 / (k + rank), ranks from 1. Best first; a tie goes to the id
 * with the better rank in the earliest list that holds it, then to the lower id.
 */
export function fuseRankings(lists, k = RRF_K) {
  const byId = new Map();
  lists.forEach((list, l) => {
    list.forEach((id, i) => {
      let e = byId.get(id);
      if (!e) {
        e = { id, score: 0, ranks: lists.map(() => null) };
        byId.set(id, e);
      }
      if (e.ranks[l] !== null) return;
      e.ranks[l] = i + 1;
      e.score += 1 / (k + i + 1);
    });
  });
  const tieKey = (e) => {
    const l = e.ranks.findIndex((r) => r !== null);
    return l * 1e9 + e.ranks[l];
  };
  return [...byId.values()].sort((a, b) => b.score - a.score || tieKey(a) - tieKey(b) || a.id - b.id);
}
