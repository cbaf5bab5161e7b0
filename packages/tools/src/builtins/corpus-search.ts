import type { RoleName } from "@agentmesh/contracts";
import { realpathSync } from "node:fs";
import { z } from "zod";
import { createComputePool, type ComputePool } from "../compute-pool.js";
import { defineTool, type ToolDefinition } from "../registry.js";
import { packageFile } from "../files.js";

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
}

const Input = z.object({
  query: z.string().trim().min(1).max(500),
  limit: z.number().int().min(1).max(20).default(5),
});
const Hit = z.object({ path: z.string(), passage: z.string(), score: z.number() });
const Output = z.object({ results: z.array(Hit).max(20) });

/** The corpus_search tool and the worker pool to close when the process stops. */
export function createCorpusSearchTool(opts: CorpusSearchOptions): {
  tool: ToolDefinition<typeof Input, typeof Output>;
  pool: ComputePool;
} {
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
  const tool = defineTool({
    name: "corpus_search",
    description:
      "Search the local document corpus (BM25 over passages). Returns the best passages with their document path and score.",
    input: Input,
    output: Output,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? 5000,
    async execute(input, ctx) {
      return Output.parse(await pool.run({ dir, query: input.query, limit: input.limit, ...settings }, ctx.signal));
    },
  });
  return { tool, pool };
}
