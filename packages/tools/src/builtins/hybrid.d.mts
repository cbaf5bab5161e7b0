/** Reciprocal rank fusion's constant: a passage at rank r of a list adds 1 / (RRF_K + r). */
export declare const RRF_K: 60;

/** Candidates taken from each ranking before fusion. */
export declare const FUSION_DEPTH: 50;

/** The vector scaled to length 1 (a zero vector stays zero), as a new Float32Array. */
export declare function normalize(vector: ArrayLike<number>): Float32Array;

/** One row of a cosine ranking. */
export interface CosineHit {
  readonly row: number;
  readonly cosine: number;
}

/**
 * Exact cosine of a unit query against every row of a row-major matrix of unit vectors: the
 * `depth` rows with the highest positive cosine, best first (a tie keeps the lower row first).
 */
export declare function cosineTop(
  matrix: ArrayLike<number>,
  dim: number,
  query: ArrayLike<number>,
  depth: number,
): CosineHit[];

/** One id after fusion: its fused score and its rank in each list (null where a list lacks it). */
export interface FusedHit {
  readonly id: number;
  readonly score: number;
  readonly ranks: ReadonlyArray<number | null>;
}

/**
 * Reciprocal rank fusion of rankings (each a list of ids, best first): an id's score is the sum
 * over the lists that hold it of 1 / (k + rank), ranks from 1. Best first; a tie goes to the id
 * with the better rank in the earliest list that holds it, then to the lower id.
 */
export declare function fuseRankings(lists: ReadonlyArray<readonly number[]>, k?: number): FusedHit[];
