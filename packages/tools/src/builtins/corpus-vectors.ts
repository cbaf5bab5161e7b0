import type { Embedder } from "./embeddings.js";
import { normalize } from "./hybrid.mjs";
import type { VectorFiles } from "./vector-files.js";

/** The unit vectors of one corpus version's passages, row-major in passage order, shared with the corpus worker. */
export interface CorpusVectors {
  /** The corpus version (a hash of the chunking settings and every file's path and content). */
  readonly version: string;
  readonly model: string;
  readonly dim: number;
  readonly count: number;
  /** `count * dim` float32 values; shared memory, so handing it to the worker copies nothing. */
  readonly data: SharedArrayBuffer;
}

/** What the cache has cost: embedding requests by kind, corpus versions embedded, versions read from disk. */
export interface EmbeddingCacheStats {
  readonly corpusRequests: number;
  readonly queryRequests: number;
  readonly versionsEmbedded: number;
  readonly versionsLoaded: number;
  /** The last failure to save vectors to disk (searches go on from memory), or null. */
  readonly saveError: string | null;
}

/**
 * The in-process cache of corpus embeddings, keyed by embeddings model and corpus version: a
 * version is embedded once per process (concurrent searches share the work in flight), a failed
 * embedding is forgotten so the next search tries again, and the two most recent versions are
 * kept. With vector files, a version saved there is read instead of embedded, and each version
 * embedded is saved. Query vectors are kept for the last 64 queries (a retried task asks the same).
 */
export interface CorpusEmbeddingCache {
  /** The vectors of `version`, embedding `passages()` when this process has not yet. */
  vectorsFor(version: string, passages: () => Promise<readonly string[]>): Promise<CorpusVectors>;
  /** The unit vector of a query. */
  queryVector(query: string, signal: AbortSignal): Promise<Float32Array>;
  stats(): EmbeddingCacheStats;
}

/** Options of the corpus embedding cache. */
export interface CorpusEmbeddingCacheOptions {
  /** Passages per embeddings request (default 64). */
  readonly batchSize?: number;
  /** Corpus versions kept (default 2). */
  readonly keepVersions?: number;
  /** Where vectors are saved and looked for before embedding (default: memory only). */
  readonly files?: VectorFiles | null;
}

const QUERY_CACHE = 64;

class CorpusEmbeddingCacheImpl implements CorpusEmbeddingCache {
  readonly #embedder: Embedder;
  readonly #batch: number;
  readonly #keep: number;
  readonly #files: VectorFiles | null;
  readonly #versions = new Map<string, Promise<CorpusVectors>>();
  readonly #queries = new Map<string, Float32Array>();
  #corpusRequests = 0;
  #queryRequests = 0;
  #embedded = 0;
  #loaded = 0;
  #saveError: string | null = null;

  constructor(embedder: Embedder, opts: CorpusEmbeddingCacheOptions) {
    this.#embedder = embedder;
    this.#batch = Math.max(1, opts.batchSize ?? 64);
    this.#keep = Math.max(1, opts.keepVersions ?? 2);
    this.#files = opts.files ?? null;
  }

  vectorsFor(version: string, passages: () => Promise<readonly string[]>): Promise<CorpusVectors> {
    const key = `${this.#embedder.model}\u0000${version}`;
    const known = this.#versions.get(key);
    if (known) return known;
    const made = this.#fromFileOrEmbedded(version, passages);
    this.#versions.set(key, made);
    made.then(
      () => {
        // oldest first: Map keeps insertion order
        while (this.#versions.size > this.#keep) {
          const oldest = this.#versions.keys().next().value;
          if (oldest === undefined) break;
          this.#versions.delete(oldest);
        }
      },
      () => this.#versions.delete(key),
    );
    return made;
  }

  async #fromFileOrEmbedded(version: string, passages: () => Promise<readonly string[]>): Promise<CorpusVectors> {
    const saved = await this.#files?.load(this.#embedder.model, version);
    if (saved) {
      this.#loaded += 1;
      return saved;
    }
    const made = await this.#embedCorpus(version, passages);
    this.#embedded += 1;
    try {
      await this.#files?.save(made);
      this.#saveError = null;
    } catch (err) {
      this.#saveError = (err instanceof Error ? err.message : String(err)).slice(0, 300);
    }
    return made;
  }

  async #embedCorpus(version: string, passages: () => Promise<readonly string[]>): Promise<CorpusVectors> {
    const texts = await passages();
    // Not the signal of the search that asked first: the vectors serve every later search too,
    // so a search that gives up waiting leaves the embedding running (each request has its timeout).
    const signal = new AbortController().signal;
    let shared: SharedArrayBuffer | null = null;
    let view: Float32Array | null = null;
    let dim = 0;
    for (let start = 0; start < texts.length; start += this.#batch) {
      this.#corpusRequests += 1;
      const batch = texts.slice(start, start + this.#batch);
      const rows = await this.#embedder.embed(batch, { signal });
      if (rows.length !== batch.length) throw new Error(`${rows.length} vectors for ${batch.length} passages`);
      for (const [i, row] of rows.entries()) {
        if (view === null) {
          dim = row.length;
          shared = new SharedArrayBuffer(texts.length * dim * Float32Array.BYTES_PER_ELEMENT);
          view = new Float32Array(shared);
        }
        if (row.length !== dim)
          throw new Error(`the embeddings model changed its vector length (${dim}, then ${row.length})`);
        view.set(normalize(row), (start + i) * dim);
      }
    }
    return { version, model: this.#embedder.model, dim, count: texts.length, data: shared ?? new SharedArrayBuffer(0) };
  }

  async queryVector(query: string, signal: AbortSignal): Promise<Float32Array> {
    const known = this.#queries.get(query);
    if (known) return known;
    this.#queryRequests += 1;
    const [row] = await this.#embedder.embed([query], { signal });
    const vector = normalize(row ?? []);
    this.#queries.set(query, vector);
    if (this.#queries.size > QUERY_CACHE) {
      const oldest = this.#queries.keys().next().value;
      if (oldest !== undefined) this.#queries.delete(oldest);
    }
    return vector;
  }

  stats(): EmbeddingCacheStats {
    return {
      corpusRequests: this.#corpusRequests,
      queryRequests: this.#queryRequests,
      versionsEmbedded: this.#embedded,
      versionsLoaded: this.#loaded,
      saveError: this.#saveError,
    };
  }
}

/** The in-process cache of a corpus's embeddings over one embeddings backend. */
export function createCorpusEmbeddingCache(
  embedder: Embedder,
  opts: CorpusEmbeddingCacheOptions = {},
): CorpusEmbeddingCache {
  return new CorpusEmbeddingCacheImpl(embedder, opts);
}
