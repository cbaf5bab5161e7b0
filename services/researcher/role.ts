import { defineAgent } from "@agentmesh/agent-kit";
import { STREAMING_CONFIG, type AgentAction } from "@agentmesh/contracts";
import { needsModel } from "@agentmesh/offline-kit";
import { renderAnalyze, renderFinalize, renderSynthesize, search } from "./research-agent.js";
import { renderResearch, researchOffline, summarizeResearch } from "./research-step.js";

/** Offline the supervisor's research agent answers `needs_model`: it cannot pick searches, read sources or write a report without a model. */
const researchNeedsModel = needsModel("research agent", "choose its searches, read the sources or write a report");

/** One line for the log. */
const summarizeAction = (o: AgentAction): string => (o.action === "tool" ? `tool ${o.tool}` : `search ended, ${o.text.length} characters on what it found`);

/** The researcher: one research step at a time (seed 004), and the supervisor's research agent (seed 002). */
export default defineAgent({
  role: "researcher",
  description: "Carries out one research step with its tools (critic chain), and runs the supervisor's research agent: search, analyze, synthesize, finalize",
  ops: {
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
