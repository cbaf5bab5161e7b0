import { existsSync } from "node:fs";
import { defineAgent, defineRoleSetup, type AgentSetup } from "@agentmesh/agent-kit";
import type { Logger } from "@agentmesh/service-kit";
import {
  createBraveWebSearch,
  createCorpusSearchTool,
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
          `${o.items.length} items (${["memory", "corpus", "web"].map((s) => `${s} ${o.items.filter((i) => i.source === s).length}`).join(", ")})`,
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
          }),
        summarize: (o) => `${o.citations.length} source(s) cited, ${o.response_str.length} characters`,
      },
    },
  });
}

/**
 * Builds the retriever from its configuration: corpus_search over the corpus folder (off the event
 * loop, in the tools package's worker) and web_search, both callable by the retriever role only.
 */
export function createRetriever(cfg: RetrieverConfig, log: Logger): AgentSetup {
  const tools: ToolDefinition[] = [];
  const closers: Array<() => Promise<void>> = [];
  const corpusConfigured = existsSync(cfg.corpusDir);
  if (corpusConfigured) {
    const corpus = createCorpusSearchTool({ dir: cfg.corpusDir, allowedRoles: ["retriever"] });
    tools.push(corpus.tool);
    closers.push(() => corpus.pool.close());
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
