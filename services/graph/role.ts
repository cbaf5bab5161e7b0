import { defineAgent, defineRoleSetup, type AgentSetup } from "@agentmesh/agent-kit";
import { AgentmeshError } from "@agentmesh/contracts";
import type { Logger } from "@agentmesh/service-kit";
import { loadKnowledgeGraph, type KnowledgeGraph } from "@agentmesh/tools";
import { answerFromGraph, graphDraftOffline } from "./answer.js";
import { loadGraphConfig, type GraphConfig } from "./config.js";

/** The graph role over a loaded knowledge graph. */
export function graphAgent(graph: KnowledgeGraph) {
  return defineAgent({
    role: "graph",
    description:
      "Answers from a knowledge graph of triples, citing each triple used by its source (halo's graph specialist)",
    ops: {
      answer: {
        kind: "handler",
        version: "graph.answer/1",
        contract: "graph.answer",
        run: (input, ctx) => answerFromGraph(graph, input, ctx),
        summarize: (o) => `${o.citations.length} triple(s) cited, ${o.response_str.length} characters`,
        // the model call that writes the prose, answered offline from the same triples
        offline: graphDraftOffline(graph),
      },
    },
  });
}

/** Issues shown in a start-up message or warning at most. */
const SHOWN_ISSUES = 5;

/**
 * Loads the graph named by the configuration. A path that names nothing readable, or a graph
 * without a single valid triple, is a start-up error saying why; skipped lines are a warning.
 */
export async function loadGraph(cfg: GraphConfig, log: Logger): Promise<KnowledgeGraph> {
  let graph: KnowledgeGraph;
  try {
    graph = await loadKnowledgeGraph(cfg.graphPath);
  } catch (err) {
    if (err instanceof AgentmeshError)
      throw new AgentmeshError(err.code, `AGENTMESH_GRAPH_PATH: ${err.message}`, { cause: err });
    throw err;
  }
  const issues = graph.issues.slice(0, SHOWN_ISSUES).map((i) => `${i.where}: ${i.message}`);
  if (graph.size === 0) {
    const why = issues.length
      ? `; ${graph.issueCount} problem(s), first: ${issues.join("; ")}`
      : " (no .jsonl lines found)";
    throw new AgentmeshError(
      "invalid_config",
      `AGENTMESH_GRAPH_PATH=${cfg.graphPath}: the knowledge graph has no valid triple${why}`,
    );
  }
  if (graph.issueCount > 0)
    log.warn(
      { graph_path: cfg.graphPath, triples: graph.size, problems: graph.issueCount, first: issues },
      "the knowledge graph loaded with lines skipped",
    );
  else log.info({ graph_path: cfg.graphPath, triples: graph.size }, "knowledge graph loaded");
  return graph;
}

/** Builds the graph role from its configuration: its graph is loaded once, at start. */
export async function createGraph(cfg: GraphConfig, log: Logger): Promise<AgentSetup> {
  return { agents: [graphAgent(await loadGraph(cfg, log))] };
}

/** The graph role folder's entry: its knowledge graph is loaded from the environment at start. */
export default defineRoleSetup("graph", (env, log) => createGraph(loadGraphConfig(env), log));
