import { AgentmeshError } from "@agentmesh/contracts";
import type { OpenAI } from "openai";
import type * as OpenAISdk from "openai";
import { z } from "zod";
import { cappedFetch, endpointFailure } from "./openai-failure.js";

/**
 * An embeddings backend: one vector per text, in the texts' order, all of one length. Throws
 * `AgentmeshError`s: `tool_unavailable` (key refused), `tool_error` (retryable on 429, 5xx and
 * network failures), `timeout`, `cancelled`.
 */
export interface Embedder {
  /** The model asked for; part of the cache key of a corpus's vectors. */
  readonly model: string;
  embed(texts: readonly string[], opts: { readonly signal: AbortSignal }): Promise<number[][]>;
}

/** Options of the OpenAI-compatible embeddings provider (OpenAI, Ollama, vLLM, LiteLLM, LocalAI, a local fake). */
export interface OpenAIEmbeddingsOptions {
  /** The API base, e.g. https://api.openai.com/v1; requests go to `{base}/embeddings`. */
  readonly baseUrl: string;
  /** Sent as a bearer token; never part of an error. */
  readonly apiKey?: string;
  readonly model: string;
  /** One request's timeout (default 30 s); a caller's signal may abort it sooner. */
  readonly timeoutMs?: number;
  readonly fetch?: typeof globalThis.fetch;
  /** Largest response body read (default 64 MiB). */
  readonly maxResponseBytes?: number;
}

const ENDPOINT = "the embeddings endpoint";

const EmbeddingsResponse = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()).min(1) })),
});

/** The vectors of a response, in input order, checked: one per text, all of one length, finite. */
function vectorsOf(body: unknown, count: number): number[][] {
  const parsed = EmbeddingsResponse.safeParse(body);
  const bad = (why: string) =>
    new AgentmeshError("tool_error", `${ENDPOINT} sent an unexpected response: ${why}`, { retryable: false });
  if (!parsed.success) throw bad("no data of embedding vectors");
  const rows = [...parsed.data.data].sort((a, b) => a.index - b.index);
  if (rows.length !== count || rows.some((r, i) => r.index !== i))
    throw bad(`${rows.length} vectors for ${count} texts`);
  const dim = rows[0]?.embedding.length ?? 0;
  if (rows.some((r) => r.embedding.length !== dim)) throw bad("vectors of different lengths");
  if (rows.some((r) => r.embedding.some((x) => !Number.isFinite(x)))) throw bad("a vector with a non-finite value");
  return rows.map((r) => r.embedding);
}

/**
 * The OpenAI-compatible embeddings provider, through the `openai` client (the reference client of
 * this wire format, already the model port's and the images provider's). Vectors are asked for as
 * floats (`encoding_format: "float"`, which every compatible server speaks). The client's own
 * retries are off; the key never appears in an error.
 */
export function createOpenAIEmbeddings(opts: OpenAIEmbeddingsOptions): Embedder {
  if (!opts.baseUrl) throw new Error("the OpenAI-compatible embeddings provider needs a base URL");
  const secrets = opts.apiKey ? [opts.apiKey] : [];
  let sdk: typeof OpenAISdk | null = null;
  // the `openai` package is imported by the first call: a process without embeddings never loads it
  let made: Promise<OpenAI> | null = null;
  const connect = (): Promise<OpenAI> =>
    (made ??= import("openai").then((loaded) => {
      sdk = loaded;
      return new loaded.OpenAI({
        baseURL: opts.baseUrl,
        apiKey: opts.apiKey || "not-needed",
        organization: null,
        project: null,
        webhookSecret: null,
        logLevel: "off",
        maxRetries: 0,
        timeout: opts.timeoutMs ?? 30_000,
        fetch: cappedFetch(opts.fetch ?? globalThis.fetch, opts.maxResponseBytes ?? 64 * 1024 * 1024, ENDPOINT),
      });
    }));
  return {
    model: opts.model,
    async embed(texts, { signal }) {
      if (texts.length === 0) return [];
      let body: unknown;
      try {
        const client = await connect();
        body = await client.embeddings.create(
          { model: opts.model, input: [...texts], encoding_format: "float" },
          { signal, maxRetries: 0 },
        );
      } catch (err) {
        throw endpointFailure(err, "embedding", signal, { sdk, secrets, endpoint: ENDPOINT });
      }
      return vectorsOf(body, texts.length);
    },
  };
}
