import { parseEnv } from "@agentmesh/service-kit";

const NAMES = [
  "AGENTMESH_CORPUS_DIR",
  "AGENTMESH_WEB_SEARCH_URL",
  "AGENTMESH_WEB_SEARCH_KEY",
  "AGENTMESH_EMBEDDINGS_BASE_URL",
  "AGENTMESH_EMBEDDINGS_API_KEY",
  "AGENTMESH_EMBEDDINGS_MODEL",
  "AGENTMESH_EMBEDDINGS_CACHE_DIR",
] as const;

/** An OpenAI-compatible embeddings endpoint: the corpus is then ranked hybrid (docs/retrieval.md). */
export interface EmbeddingsConfig {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly model: string;
  /** Where the corpus's vectors are saved; undefined: memory only. */
  readonly cacheDir: string | undefined;
}

/**
 * What the retriever searches: a corpus folder (ranked hybrid when an embeddings endpoint is
 * configured, else BM25 only) and, when a key is configured, a web search API.
 */
export interface RetrieverConfig {
  readonly corpusDir: string;
  readonly webSearch: { readonly baseUrl: string; readonly apiKey: string } | null;
  readonly embeddings: EmbeddingsConfig | null;
}

/** Reads the retriever's configuration from an environment, listing every problem at once. */
export function loadRetrieverConfig(env: Record<string, string | undefined>): RetrieverConfig {
  const e = parseEnv(NAMES, env);
  return Object.freeze({
    corpusDir: e.AGENTMESH_CORPUS_DIR,
    webSearch: e.AGENTMESH_WEB_SEARCH_KEY
      ? { baseUrl: e.AGENTMESH_WEB_SEARCH_URL, apiKey: e.AGENTMESH_WEB_SEARCH_KEY }
      : null,
    embeddings: e.AGENTMESH_EMBEDDINGS_BASE_URL
      ? {
          baseUrl: e.AGENTMESH_EMBEDDINGS_BASE_URL,
          apiKey: e.AGENTMESH_EMBEDDINGS_API_KEY,
          model: e.AGENTMESH_EMBEDDINGS_MODEL,
          cacheDir: e.AGENTMESH_EMBEDDINGS_CACHE_DIR,
        }
      : null,
  });
}
