import { parseEnv } from "@agentmesh/service-kit";

const NAMES = ["AGENTMESH_CORPUS_DIR", "AGENTMESH_WEB_SEARCH_URL", "AGENTMESH_WEB_SEARCH_KEY"] as const;

/** What the retriever searches: a corpus folder and, when a key is configured, a web search API. */
export interface RetrieverConfig {
  readonly corpusDir: string;
  readonly webSearch: { readonly baseUrl: string; readonly apiKey: string } | null;
}

/** Reads the retriever's configuration from an environment, listing every problem at once. */
export function loadRetrieverConfig(env: Record<string, string | undefined>): RetrieverConfig {
  const e = parseEnv(NAMES, env);
  return Object.freeze({
    corpusDir: e.AGENTMESH_CORPUS_DIR,
    webSearch: e.AGENTMESH_WEB_SEARCH_KEY
      ? { baseUrl: e.AGENTMESH_WEB_SEARCH_URL, apiKey: e.AGENTMESH_WEB_SEARCH_KEY }
      : null,
  });
}
