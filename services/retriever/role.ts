import { existsSync } from "node:fs";
import { defineAgent, defineRoleSetup, type AgentSetup } from "@agentmesh/agent-kit";
import type { Logger } from "@agentmesh/service-kit";
import {
  createBraveWebSearch,
  createCorpusSearchTool,
  createOpenAIEmbeddings,
  createOfflineWebSearch,
  createSafeExecutor,
  createToolRegistry,
  createWebSearchTool,
  type ToolDefinition,
} from "@agentmesh/tools";
import { loadRetrieverConfig, type RetrieverConfig } from "./config.js";
import { answerFromSources } from "./answer.js";
import { retrieve, type RetrieverDeps } from "./retrieve.js";

/** The retriever role over its search dependencies. */
export function retrieverAgent(deps: RetrieverDeps) {
  return defineAgent({
    role: "retriever",
    description:
      "Retrieves context for the question (session memory, the document corpus with citations, the web when configured) and answers halo's rag and web capabilities from it",
    ops: {
      retrieve: {
        kind: "handler",
        version: "retriever.retrieve/1",
        contract: "retriever.retrieve",
        run: (input, ctx) =>
          retrieve(input, deps, { sessionId: ctx.sessionId, taskId: ctx.taskId, signal: ctx.signal }),
        summarize: (o) =>
          `${o.items.length} items (${["memory", "corpus", "web"].map((s) => `${s} ${o.items.filter((i) => i.source === s).length}`).join(", ")})${o.corpus_ranking ? `, corpus ranked ${o.corpus_ranking.method}` : ""}`,
      },
      answer: {
        kind: "handler",
        version: "retriever.answer/1",
        contract: "retriever.answer",
        run: (input, ctx) =>
          answerFromSources(input, deps, {
            sessionId: ctx.sessionId,
            taskId: ctx.taskId,
            signal: ctx.signal,
            complete: ctx.complete,
            noteRanking: (ranking) => {
              ctx.annotate({ "agentmesh.corpus_ranking": ranking.method });
              ctx.log.info({ corpus_ranking: ranking.method, note: ranking.note || undefined }, "corpus ranking");
            },
          }),
        summarize: (o) => `${o.citations.length} source(s) cited, ${o.response_str.length} characters`,
      },
    },
  });
}

/**
 * Builds the retriever from its configuration: corpus_search over the corpus folder (off the event
 * loop, in the tools package's worker; hybrid with an embeddings endpoint, docs/retrieval.md) and
 * web_search, both callable by the retriever role only.
 */
export function createRetriever(cfg: RetrieverConfig, log: Logger): AgentSetup {
  const tools: ToolDefinition[] = [];
  const closers: Array<() => Promise<void>> = [];
  const corpusConfigured = existsSync(cfg.corpusDir);
  if (corpusConfigured) {
    const embedder = cfg.embeddings
      ? createOpenAIEmbeddings({
          baseUrl: cfg.embeddings.baseUrl,
          model: cfg.embeddings.model,
          ...(cfg.embeddings.apiKey ? { apiKey: cfg.embeddings.apiKey } : {}),
        })
      : null;
    const corpus = createCorpusSearchTool({
      dir: cfg.corpusDir,
      allowedRoles: ["retriever"],
      embedder,
      ...(cfg.embeddings?.cacheDir ? { vectorsDir: cfg.embeddings.cacheDir } : {}),
    });
    tools.push(corpus.tool);
    closers.push(() => corpus.pool.close());
    // the vectors are computed in the background at start, so the first search finds them ready
    void corpus
      .warm()
      .then((r) =>
        r.ok
          ? log.info({ corpus: r.message }, "corpus_search ranking")
          : log.warn({ corpus: r.message }, "corpus_search stays BM25 only until the embeddings endpoint answers"),
      );
  } else {
    log.warn({ corpus_dir: cfg.corpusDir }, "the corpus folder does not exist: retrieval runs without the corpus");
  }
  const provider = cfg.webSearch
    ? createBraveWebSearch({ apiKey: cfg.webSearch.apiKey, baseUrl: cfg.webSearch.baseUrl })
    : createOfflineWebSearch();
  tools.push(createWebSearchTool({ provider, allowedRoles: ["retriever"] }));
  const executor = createSafeExecutor({ registry: createToolRegistry(tools), maxCallsPerSession: 100 });
  const agent = retrieverAgent({
    webConfigured: cfg.webSearch !== null,
    corpusConfigured,
    call: (tool, args, ctx) =>
      executor.call({
        tool,
        args,
        role: "retriever",
        sessionId: ctx.sessionId,
        taskId: ctx.taskId,
        signal: ctx.signal,
      }),
  });
  return {
    agents: [agent],
    async close() {
      await Promise.all(closers.map((c) => c()));
    },
  };
}

/** The retriever role folder's entry: its corpus and web search are built from the environment at start. */
export default defineRoleSetup("retriever", (env, log) => createRetriever(loadRetrieverConfig(env), log));
