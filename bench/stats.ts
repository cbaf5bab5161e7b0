/** Latency summary of a sample, in milliseconds. */
export interface Summary {
  readonly n: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile of an ascending sorted array (p in 0..100). */
function rank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

/** Summarises samples with nearest-rank percentiles (so p99 of 40 samples is the largest one). */
export function summarize(samples: readonly number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.length === 0 ? Number.NaN : s.reduce((a, b) => a + b, 0) / s.length;
  return {
    n: s.length,
    min: s[0] ?? Number.NaN,
    p50: rank(s, 50),
    p90: rank(s, 90),
    p95: rank(s, 95),
    p99: rank(s, 99),
    max: s.at(-1) ?? Number.NaN,
    mean,
  };
}

/** The median of a set of figures (the mean of the middle two for an even count), ignoring non-finite ones; NaN for none. */
export function median(xs: readonly number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Rounds for the JSON report (3 decimals: microsecond resolution). */
export function round3(x: number): number {
  return Number.isFinite(x) ? Math.round(x * 1000) / 1000 : x;
}

export function roundSummary(s: Summary): Summary {
  return {
    n: s.n,
    min: round3(s.min),
    p50: round3(s.p50),
    p90: round3(s.p90),
    p95: round3(s.p95),
    p99: round3(s.p99),
    max: round3(s.max),
    mean: round3(s.mean),
  };
}

/** A millisecond figure for the table: 3 significant-ish digits. */
export function ms(x: number): string {
  if (!Number.isFinite(x)) return "-";
  if (x < 1) return x.toFixed(3);
  if (x < 10) return x.toFixed(2);
  if (x < 100) return x.toFixed(1);
  return x.toFixed(0);
}
