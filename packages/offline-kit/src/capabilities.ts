import type { Capability } from "@agentmesh/contracts";
import { isGreeting, isVague } from "./classify.js";
import { padded } from "./words.js";

/**
 * The offline planner's cue words per capability (offline, the planner picks by keywords),
 * lowercase, matched as whole words or phrases. chitchat has none: it is what a greeting, a
 * vague query or a deployment that can serve nothing else gets.
 */
const CUES: Readonly<Record<Exclude<Capability, "chitchat">, readonly string[]>> = {
  graph: [
    "relationship",
    "relationships",
    "related",
    "relate",
    "interact",
    "interacts",
    "interaction",
    "interactions",
    "pathway",
    "pathways",
    "connected",
    "connection",
    "associated",
    "association",
    "linked",
    "graph",
    "triple",
    "triples",
  ],
  rag: [
    "document",
    "documents",
    "docs",
    "paper",
    "papers",
    "corpus",
    "passage",
    "guideline",
    "guidelines",
    "according to",
    "notes",
    "literature",
    "readme",
    "manual",
  ],
  biomcp: [
    "gene",
    "genes",
    "variant",
    "variants",
    "mutation",
    "mutations",
    "clinical trial",
    "clinical trials",
    "trial",
    "trials",
    "drug",
    "drugs",
    "therapy",
    "protein",
    "disease",
    "cancer",
    "tumor",
    "biomarker",
    "pubmed",
    "biomcp",
  ],
  web: [
    "latest",
    "news",
    "today",
    "recent",
    "recently",
    "current",
    "currently",
    "this week",
    "this year",
    "website",
    "online",
    "web",
    "search the web",
  ],
  llama_mcp: ["llama", "llamaindex", "llama index", "llama_mcp", "llamacloud"],
};

/** What a question with no cue gets: the specialists that answer from local knowledge. */
const DEFAULT_PICK: readonly Capability[] = ["graph", "rag"];

/**
 * The offline planner's capability plan for a question: every capability whose cue words it
 * mentions, in the tag order, among those the deployment can serve (`available`;
 * chitchat always can). A greeting or a vague query gets `["chitchat"]`; a question with no cue
 * gets the local-knowledge specialists it can serve (graph, rag), else `["chitchat"]`.
 */
export function pickCapabilities(question: string, available: readonly Capability[]): Capability[] {
  if (isGreeting(question) || isVague(question)) return ["chitchat"];
  const servable = (c: Capability) => c === "chitchat" || available.includes(c);
  const text = padded(question);
  const cued = (Object.keys(CUES) as Array<keyof typeof CUES>).filter(
    (c) => servable(c) && CUES[c].some((cue) => text.includes(padded(cue))),
  );
  if (cued.length > 0) return cued;
  const fallback = DEFAULT_PICK.filter(servable);
  return fallback.length > 0 ? fallback : ["chitchat"];
}
