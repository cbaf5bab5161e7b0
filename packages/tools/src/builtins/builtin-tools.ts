import type { RoleName } from "@agentmesh/contracts";
import type { ComputePool } from "../compute-pool.js";
import type { ToolDefinition } from "../registry.js";
import { createJsRunner, type JsRunnerOptions } from "../runners/run-js.js";
import { createPythonRunner, type PythonRunnerOptions } from "../runners/run-python.js";
import type { CodeRunner } from "../runners/types.js";
import { createCalculatorTool } from "./calculator.js";
import { createRunJsTool, createRunPythonTool } from "./code-tools.js";
import { createCorpusSearchTool } from "./corpus-search.js";
import type { Embedder } from "./embeddings.js";
import { createFileReadTool } from "./file-read.js";
import { createAnalyzeImageTool, createGenerateImageTool } from "./image-tools.js";
import type { ImageProvider } from "./images.js";
import { createOfflineWebSearch, createWebSearchTool, type WebSearchProvider } from "./web-search.js";

/** Names of the built-in tools. */
export type BuiltinToolName =
  | "calculator"
  | "file_read"
  | "corpus_search"
  | "web_search"
  | "run_js"
  | "run_python"
  | "generate_image"
  | "analyze_image";

/** Least privilege by default: each role gets only the tools its step needs. */
export const DEFAULT_TOOL_ROLES: Readonly<Record<BuiltinToolName, readonly RoleName[]>> = Object.freeze({
  calculator: ["researcher", "expert"],
  file_read: ["researcher"],
  corpus_search: ["researcher", "expert"],
  web_search: ["researcher"],
  run_js: ["researcher", "expert"],
  run_python: ["researcher", "expert"],
  generate_image: ["researcher", "chat"],
  analyze_image: ["researcher", "chat"],
});

/** What the built-in tools are configured with (a service's config.ts fills this from its env). */
export interface BuiltinToolsOptions {
  /** Overrides who may call which tool. */
  readonly roles?: Partial<Record<BuiltinToolName, readonly RoleName[]>>;
  /** Folders `file_read` may read; without them there is no `file_read`. */
  readonly fileRoots?: readonly string[];
  /** Folder of documents for `corpus_search`; without it there is no `corpus_search`. */
  readonly corpusDir?: string;
  /** Embeddings backend of `corpus_search`'s hybrid ranking; without it BM25 only. */
  readonly embedder?: Embedder | null;
  /** Folder `corpus_search` saves its vectors in; absent: memory only. */
  readonly vectorsDir?: string;
  /** Web search backend; the default answers "no web search provider is configured". */
  readonly webSearch?: WebSearchProvider;
  /**
   * Images backend of `generate_image` and `analyze_image`; without it both are left out (pass
   * `createOfflineImages()` to offer them answering `tool_unavailable`).
   */
  readonly images?: ImageProvider;
  /** Runner options, or false to leave the tool out. */
  readonly js?: JsRunnerOptions | false;
  readonly python?: PythonRunnerOptions | false;
}

/** The built-in tools and what must be closed when the process stops. */
export interface BuiltinTools {
  readonly tools: readonly ToolDefinition[];
  /** Embeds the corpus of `corpus_search` ahead of its first search (see `CorpusSearch.warm`); never throws. */
  warm(): Promise<{ ok: boolean; message: string }>;
  /** Terminates workers and sandboxed processes. */
  close(): Promise<void>;
}

/** Builds the built-in tools from options (no env reads; nothing starts before first use but warm pools). */
export function builtinTools(opts: BuiltinToolsOptions = {}): BuiltinTools {
  const roles = { ...DEFAULT_TOOL_ROLES, ...opts.roles };
  const tools: ToolDefinition[] = [];
  const pools: ComputePool[] = [];
  const runners: CodeRunner[] = [];
  let warm = () => Promise.resolve({ ok: true, message: "no corpus_search" });

  const calc = createCalculatorTool({ allowedRoles: roles.calculator });
  tools.push(calc.tool);
  pools.push(calc.pool);
  if (opts.fileRoots?.length) tools.push(createFileReadTool({ roots: opts.fileRoots, allowedRoles: roles.file_read }));
  if (opts.corpusDir) {
    const corpus = createCorpusSearchTool({
      dir: opts.corpusDir,
      allowedRoles: roles.corpus_search,
      embedder: opts.embedder ?? null,
      ...(opts.vectorsDir ? { vectorsDir: opts.vectorsDir } : {}),
    });
    tools.push(corpus.tool);
    pools.push(corpus.pool);
    warm = () => corpus.warm();
  }
  tools.push(
    createWebSearchTool({ provider: opts.webSearch ?? createOfflineWebSearch(), allowedRoles: roles.web_search }),
  );
  if (opts.images) {
    tools.push(createGenerateImageTool({ provider: opts.images, allowedRoles: roles.generate_image }));
    tools.push(createAnalyzeImageTool({ provider: opts.images, allowedRoles: roles.analyze_image }));
  }
  if (opts.js !== false) {
    const runner = createJsRunner(opts.js ?? {});
    runners.push(runner);
    tools.push(createRunJsTool({ runner, allowedRoles: roles.run_js }));
  }
  if (opts.python !== false) {
    const runner = createPythonRunner(opts.python ?? {});
    runners.push(runner);
    tools.push(createRunPythonTool({ runner, allowedRoles: roles.run_python }));
  }
  return {
    tools,
    warm: () => warm(),
    async close() {
      await Promise.all([...pools.map((p) => p.close()), ...runners.map((r) => r.close())]);
    },
  };
}
