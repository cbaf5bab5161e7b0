import { parseEnv } from "@agentmesh/service-kit";
import { parseMcpServers, type McpServerConfig } from "@agentmesh/tools";

const NAMES = [
  "AGENTMESH_CORPUS_DIR",
  "AGENTMESH_FILE_ROOTS",
  "AGENTMESH_WEB_SEARCH_URL",
  "AGENTMESH_WEB_SEARCH_KEY",
  "AGENTMESH_TEST_TOOLS",
  "AGENTMESH_MCP_SERVERS",
  "AGENTMESH_IMAGES_BASE_URL",
  "AGENTMESH_IMAGES_API_KEY",
  "AGENTMESH_IMAGE_MODEL",
  "AGENTMESH_VISION_MODEL",
  "AGENTMESH_EMBEDDINGS_BASE_URL",
  "AGENTMESH_EMBEDDINGS_API_KEY",
  "AGENTMESH_EMBEDDINGS_MODEL",
  "AGENTMESH_EMBEDDINGS_CACHE_DIR",
] as const;

/** The executor's tool configuration. */
export interface ExecutorConfig {
  readonly corpusDir: string;
  /** Folders `file_read` may read; empty = no `file_read`. */
  readonly fileRoots: readonly string[];
  readonly webSearch: { readonly baseUrl: string; readonly apiKey: string } | null;
  /** The images endpoint of `generate_image` and `analyze_image`; null = both answer `tool_unavailable`. */
  readonly images: {
    readonly baseUrl: string;
    readonly apiKey: string | undefined;
    readonly imageModel: string;
    readonly visionModel: string;
  } | null;
  /** The embeddings endpoint of `corpus_search`'s hybrid ranking; null = BM25 only (docs/retrieval.md). */
  readonly embeddings: {
    readonly baseUrl: string;
    readonly apiKey: string | undefined;
    readonly model: string;
    /** Where the corpus's vectors are saved; undefined: memory only. */
    readonly cacheDir: string | undefined;
  } | null;
  /** Registers `test_flaky` and `test_slow` (end-to-end tests only). */
  readonly testTools: boolean;
  /** MCP servers whose tools join the registry as `mcp.<server>.<tool>` (each callable by the roles its `allow` names). */
  readonly mcpServers: readonly McpServerConfig[];
}

/** Reads the executor's configuration from an environment, listing every problem at once. */
export function loadExecutorConfig(env: Record<string, string | undefined>): ExecutorConfig {
  const e = parseEnv(NAMES, env);
  return Object.freeze({
    corpusDir: e.AGENTMESH_CORPUS_DIR,
    fileRoots: Object.freeze(
      e.AGENTMESH_FILE_ROOTS.split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    webSearch: e.AGENTMESH_WEB_SEARCH_KEY
      ? { baseUrl: e.AGENTMESH_WEB_SEARCH_URL, apiKey: e.AGENTMESH_WEB_SEARCH_KEY }
      : null,
    images: e.AGENTMESH_IMAGES_BASE_URL
      ? {
          baseUrl: e.AGENTMESH_IMAGES_BASE_URL,
          apiKey: e.AGENTMESH_IMAGES_API_KEY,
          imageModel: e.AGENTMESH_IMAGE_MODEL,
          visionModel: e.AGENTMESH_VISION_MODEL,
        }
      : null,
    embeddings: e.AGENTMESH_EMBEDDINGS_BASE_URL
      ? {
          baseUrl: e.AGENTMESH_EMBEDDINGS_BASE_URL,
          apiKey: e.AGENTMESH_EMBEDDINGS_API_KEY,
          model: e.AGENTMESH_EMBEDDINGS_MODEL,
          cacheDir: e.AGENTMESH_EMBEDDINGS_CACHE_DIR,
        }
      : null,
    testTools: e.AGENTMESH_TEST_TOOLS,
    mcpServers: Object.freeze(parseMcpServers(e.AGENTMESH_MCP_SERVERS)),
  });
}
