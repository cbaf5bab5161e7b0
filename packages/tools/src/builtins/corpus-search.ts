import type { RoleName } from "@agentmesh/contracts";
import { realpathSync } from "node:fs";
import { z } from "zod";
import { createComputePool, type ComputePool } from "../compute-pool.js";
import { defineTool, type ToolDefinition } from "../registry.js";
import { packageFile } from "../files.js";
import { createCorpusEmbeddingCache, type CorpusEmbeddingCache, type CorpusVectors } from "./corpus-vectors.js";
import type { Embedder } from "./embeddings.js";
import { createVectorFiles } from "./vector-files.js";

/** Options of the `corpus_search` tool. */
export interface CorpusSearchOptions {
  /** The folder of documents; its files are chunked into passages and ranked with BM25. */
  readonly dir: string;
  readonly allowedRoles: readonly RoleName[];
  /** File name endings indexed (default .md, .markdown, .txt, .rst). */
  readonly extensions?: readonly string[];
  readonly maxFiles?: number;
  readonly maxFileBytes?: number;
  /** Target passage length in characters (default 800). */
  readonly passageChars?: number;
  readonly timeoutMs?: number;
  readonly maxHeapMb?: number;
  /**
   * The embeddings backend of hybrid search (BM25 and cosine over embedded passages, fused by
   * reciprocal rank); null or absent: BM25 only, and every result says so.
   */
  readonly embedder?: Embedder | null;
  /**
   * How long a search waits for the corpus's vectors while they are being computed (default
   * 3000 ms, under the 5 s call timeout); past it that search is BM25 only and says so, and the
   * embedding goes on for the next one.
   */
  readonly embeddingsWaitMs?: number;
  /** A folder the vectors are saved in and read from, so a restart does not embed an unchanged corpus again; absent: memory only. */
  readonly vectorsDir?: string;
}

const Input = z.object({
  query: z.string().trim().min(1).max(500),
  limit: z.number().int().min(1).max(20).default(5),
});
const Hit = z.object({
  /** The passage's id: its file's path and its number in the file (`guide.md#3`). */
  id: z.string(),
  path: z.string(),
  passage: z.string(),
  /** BM25's score alone, or the fused score of a hybrid search; higher is better. */
  score: z.number(),
  /** Its rank (from 1) in the BM25 and in the cosine ranking; null where that ranking lacks it. */
  bm25_rank: z.number().int().min(1).nullable(),
  vector_rank: z.number().int().min(1).nullable(),
  /** Cosine of the passage and the query (hybrid only, when positive). */
  cosine: z.number().nullable(),
});
const Output = z.object({
  results: z.array(Hit).max(20),
  ranking: z.enum(["hybrid", "bm25"]),
  /** Why a search is BM25 only (empty for a hybrid one). */
  ranking_note: z.string(),
});
type Output = z.infer<typeof Output>;

/** Said by every search of a corpus_search built without an embeddings backend. */
export const NO_EMBEDDINGS_NOTE = "BM25 only: no embeddings endpoint is configured";

/** The corpus_search tool, the worker pool to close when the process stops, and the warm-up of its vectors. */
export interface CorpusSearch {
  readonly tool: ToolDefinition<typeof Input, typeof Output>;
  readonly pool: ComputePool;
  /** Embeds the corpus now (a no-op without an embedder), so the first search finds the vectors ready; never throws. */
  warm(): Promise<{ ok: boolean; message: string }>;
  /** The embedding requests made so far (null without an embedder). */
  embeddingStats(): ReturnType<CorpusEmbeddingCache["stats"]> | null;
}

type Payload = Record<string, unknown>;
type Bm25Reply = { version: string; results: Output["results"] };
type HybridReply = { version: string; results: Output["results"] } | { version: string; stale: true };

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 300);

/** The vectors of the corpus's current version, embedded now when they are not cached. */
async function corpusVectors(
  cache: CorpusEmbeddingCache,
  run: (payload: Payload) => Promise<unknown>,
): Promise<CorpusVectors> {
  const { version } = (await run({ op: "version" })) as { version: string };
  return cache.vectorsFor(version, async () => ((await run({ op: "passages" })) as { passages: string[] }).passages);
}

/** The vectors of the corpus's current version, waiting at most `waitMs`; null when not ready by then. */
async function readyVectors(
  cache: CorpusEmbeddingCache,
  run: (payload: Payload) => Promise<unknown>,
  waitMs: number,
): Promise<CorpusVectors | null> {
  const made = corpusVectors(cache, run);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)));
  try {
    return await Promise.race([made, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The corpus_search tool and the worker pool to close when the process stops. */
export function createCorpusSearchTool(opts: CorpusSearchOptions): CorpusSearch {
  const dir = realpathSync(opts.dir);
  const settings = {
    extensions: (opts.extensions ?? [".md", ".markdown", ".txt", ".rst"]).map((e) => e.toLowerCase()),
    maxFiles: opts.maxFiles ?? 5000,
    maxFileBytes: opts.maxFileBytes ?? 2 * 1024 * 1024,
    passageChars: opts.passageChars ?? 800,
  };
  const pool = createComputePool({
    url: packageFile("./builtins/corpus.worker.mjs"),
    size: 1,
    resourceLimits: { maxOldGenerationSizeMb: opts.maxHeapMb ?? 512, maxYoungGenerationSizeMb: 32 },
  });
  const files = opts.vectorsDir ? createVectorFiles(opts.vectorsDir) : null;
  const cache = opts.embedder ? createCorpusEmbeddingCache(opts.embedder, { files }) : null;
  const waitMs = opts.embeddingsWaitMs ?? 3000;
  // a warm-up has no caller's deadline: a minute for the files, the embedding has its own timeouts
  const run = (payload: Payload, signal: AbortSignal = AbortSignal.timeout(60_000)) =>
    pool.run({ dir, ...settings, ...payload }, signal);
  const bm25 = async (query: string, limit: number, signal: AbortSignal, note: string): Promise<Output> => {
    const r = (await run({ op: "search", query, limit }, signal)) as Bm25Reply;
    return { results: r.results, ranking: "bm25", ranking_note: note };
  };
  const search = async (query: string, limit: number, signal: AbortSignal): Promise<Output> => {
    if (cache === null) return bm25(query, limit, signal, NO_EMBEDDINGS_NOTE);
    let vectors: CorpusVectors | null;
    let queryVector: Float32Array;
    try {
      [vectors, queryVector] = await Promise.all([
        readyVectors(cache, (p) => run(p, signal), waitMs),
        cache.queryVector(query, signal),
      ]);
    } catch (err) {
      if (signal.aborted) throw err;
      return bm25(query, limit, signal, `BM25 only: the embeddings endpoint failed: ${errorText(err)}`);
    }
    if (vectors === null)
      return bm25(query, limit, signal, "BM25 only: the corpus's embeddings are still being computed");
    const r = (await run({ op: "hybrid", query, limit, vectors, queryVector }, signal)) as HybridReply;
    // the corpus changed between embedding and search: the next search embeds the new version
    if ("stale" in r) return bm25(query, limit, signal, "BM25 only: the corpus changed since it was embedded");
    return { results: r.results, ranking: "hybrid", ranking_note: "" };
  };
  const tool = defineTool({
    name: "corpus_search",
    description:
      "Search the local document corpus (BM25 over passages, fused with embedding similarity when an embeddings endpoint is configured). Returns the best passages with their id, document path and score.",
    input: Input,
    output: Output,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? 5000,
    async execute(input, ctx) {
      return Output.parse(await search(input.query, input.limit, ctx.signal));
    },
  });
  return {
    tool,
    pool,
    async warm() {
      if (cache === null) return { ok: true, message: NO_EMBEDDINGS_NOTE };
      try {
        const vectors = await corpusVectors(cache, (p) => run(p));
        const { versionsLoaded, saveError } = cache.stats();
        const how = versionsLoaded > 0 ? "read from the vectors folder" : "embedded";
        const unsaved = saveError ? `; they could not be saved: ${saveError}` : "";
        return { ok: true, message: `${vectors.count} passages ${how} (corpus version ${vectors.version})${unsaved}` };
      } catch (err) {
        return { ok: false, message: `the corpus could not be embedded: ${errorText(err)}` };
      }
    },
    embeddingStats: () => cache?.stats() ?? null,
  };
}
