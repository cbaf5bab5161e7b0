import { existsSync } from "node:fs";
import { defineAgent, defineRoleSetup, type AgentSetup } from "@agentmesh/agent-kit";
import { parseEnv, type Logger } from "@agentmesh/service-kit";
import {
  createBraveWebSearch,
  createCorpusSearchTool,
  createOfflineWebSearch,
  createSafeExecutor,
  createToolRegistry,
  createWebSearchTool,
  type ToolDefinition,
} from "@agentmesh/tools";
import { gather, type GatherDeps } from "./gather.js";
import { STREAMING_CONFIG, type AgentAction } from "@agentmesh/contracts";
import { needsModel } from "@agentmesh/offline-kit";
import { renderAnalyze, renderFinalize, renderSynthesize, search } from "./research-agent.js";
import { renderResearch, researchOffline, summarizeResearch } from "./research-step.js";

/** Offline the supervisor's research agent answers `needs_model`: it cannot pick searches, read sources or write a report without a model. */
const researchNeedsModel = needsModel("research agent", "choose its searches, read the sources or write a report");

/** One line for the log. */
const summarizeAction = (o: AgentAction): string =>
  o.action === "tool" ? `tool ${o.tool}` : `search ended, ${o.text.length} characters on what it found`;

/**
 * The researcher over its search dependencies: critic-chain's one research step at a time with its
 * tools, the supervisor's research agent, clarify's research agent.
 */
export function researcherAgent(deps: GatherDeps) {
  return defineAgent({
    role: "researcher",
    description:
      "Carries out one research step with its tools (critic chain), runs the supervisor's research agent (search, analyze, synthesize, finalize) and gathers clarify's cited passages",
    ops: {
      gather: {
        kind: "handler",
        version: "researcher.gather/1",
        contract: "researcher.gather",
        run: (input, ctx) => gather(input, deps, { sessionId: ctx.sessionId, taskId: ctx.taskId, signal: ctx.signal }),
        summarize: (o) =>
          `${o.passages.length} passage(s) for "${o.query}"${o.gaps.length ? `, ${o.gaps.length} gap(s)` : ""}`,
      },
      research: {
        contract: "researcher.research",
        render: renderResearch,
        summarize: summarizeResearch,
        // Offline it searches the corpus and quotes what it found; it never invents a finding.
        offline: researchOffline,
      },
      search: {
        kind: "handler",
        version: "researcher.search/1",
        contract: "researcher.search",
        run: search,
        summarize: summarizeAction,
        offline: researchNeedsModel,
      },
      analyze: {
        contract: "researcher.analyze",
        render: renderAnalyze,
        summarize: (o) => `an analysis of ${o.analysis.length} characters`,
        offline: researchNeedsModel,
      },
      synthesize: {
        contract: "researcher.synthesize",
        output: "text",
        stream: STREAMING_CONFIG.synthesize,
        render: renderSynthesize,
        toOutput: (text) => ({ synthesis: text }),
        summarize: (o) => `a synthesis of ${o.synthesis.length} characters`,
        offline: researchNeedsModel,
      },
      finalize: {
        contract: "researcher.finalize",
        output: "text",
        stream: STREAMING_CONFIG.finalize,
        render: renderFinalize,
        // the report is the session's final answer as the model wrote it
        toOutput: (text) => ({ response: text }),
        summarize: (o) => `a report of ${o.response.length} characters`,
        offline: researchNeedsModel,
      },
    },
  });
}

/**
 * Builds the researcher from its environment: corpus_search over the corpus folder (off the event
 * loop, in the tools package's worker) and web_search when a key is set, both for clarify's gather.
 */
export function createResearcher(env: Record<string, string | undefined>, log: Logger): AgentSetup {
  const e = parseEnv(["AGENTMESH_CORPUS_DIR", "AGENTMESH_WEB_SEARCH_URL", "AGENTMESH_WEB_SEARCH_KEY"], env);
  const tools: ToolDefinition[] = [];
  const closers: Array<() => Promise<void>> = [];
  const corpusConfigured = existsSync(e.AGENTMESH_CORPUS_DIR);
  if (corpusConfigured) {
    const corpus = createCorpusSearchTool({ dir: e.AGENTMESH_CORPUS_DIR, allowedRoles: ["researcher"] });
    tools.push(corpus.tool);
    closers.push(() => corpus.pool.close());
  } else {
    log.warn(
      { corpus_dir: e.AGENTMESH_CORPUS_DIR },
      "the corpus folder does not exist: clarify's research runs without the corpus",
    );
  }
  const web = e.AGENTMESH_WEB_SEARCH_KEY
    ? createBraveWebSearch({ apiKey: e.AGENTMESH_WEB_SEARCH_KEY, baseUrl: e.AGENTMESH_WEB_SEARCH_URL })
    : createOfflineWebSearch();
  tools.push(createWebSearchTool({ provider: web, allowedRoles: ["researcher"] }));
  const executor = createSafeExecutor({ registry: createToolRegistry(tools), maxCallsPerSession: 100 });
  const agent = researcherAgent({
    corpusConfigured,
    webConfigured: e.AGENTMESH_WEB_SEARCH_KEY !== undefined,
    call: (tool, args, ctx) =>
      executor.call({
        tool,
        args,
        role: "researcher",
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

/** The researcher role folder's entry: its corpus and web search are built from the environment at start. */
export default defineRoleSetup("researcher", createResearcher);
