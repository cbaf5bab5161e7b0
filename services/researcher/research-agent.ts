import type { HandlerContext } from "@agentmesh/agent-kit";
import {
  LIMITS,
  RESEARCH_DEPTHS,
  type AgentAction,
  type HaloCitation,
  type ResearchAnalyzeRequest,
  type ResearchFinalizeRequest,
  type ResearchScenario,
  type ResearchSearchRequest,
  type ResearchSynthesizeRequest,
} from "@agentmesh/contracts";
import {
  draftToolCall,
  parseToolArguments,
  renderBrief,
  renderObservations,
  renderTools,
} from "@agentmesh/offline-kit";
import { z } from "zod";

/**
 * The supervisor's research agent (`search_agent ⇄ search_tools → analyze → synthesize
 * → finalize`): what each node's model is told, per scenario, and how the search node's reply
 * becomes an `AgentAction`.
 */

/** What a scenario asks of the search, the analysis and the synthesis: the research agent's four scenarios differ here. */
interface ScenarioGuide {
  readonly label: string;
  readonly search: string;
  readonly analyze: string;
  readonly synthesize: string;
}

/** The four scenarios' guidance (academic, market, technical, news), in our own words. */
export const SCENARIOS: Readonly<Record<ResearchScenario, ScenarioGuide>> = {
  academic: {
    label: "academic research",
    search:
      "Prefer peer-reviewed papers, preprints, systematic reviews and the authors' own pages; search with the field's own terms and the names of key studies or authors.",
    analyze:
      "For each finding, say how it was established: the method or study design, the data or sample, and how strong the evidence is (replicated, a single study, a review, an opinion). " +
      "Note which sources are peer-reviewed, where they agree or contradict each other, and which claims rest on no cited evidence. Keep every claim tied to its source number.",
    synthesize:
      "Write a literature synthesis: the current state of knowledge, the main lines of evidence and how strong each is, the disagreements and open questions. " +
      "Separate established results from tentative ones and cite every claim with its source number.",
  },
  market: {
    label: "market research",
    search:
      "Look for market reports, company filings and announcements, industry associations and analyst coverage; search for figures together with a year.",
    analyze:
      "Extract the market's size and growth rate, each figure with its date and who estimated it; the main players and their positions or shares; the customer segments and pricing; " +
      "and the trends and drivers (demand, technology, regulation). Flag estimates that disagree and numbers that are old or undated.",
    synthesize:
      "Write a market overview: size and growth (every number with its date and source), the competitive landscape, the trends moving the market, and the risks and opportunities. " +
      "Prefer the most recent figures and say where estimates differ.",
  },
  technical: {
    label: "technical research",
    search:
      "Look for official documentation, specifications, release notes, source repositories and engineering write-ups; put version numbers in the query when they matter.",
    analyze:
      "Work out how the technology is built: its architecture and main components, the design trade-offs (performance, complexity, cost, compatibility), the versions each statement applies to, " +
      "its known limitations and the alternatives. Tell official documentation from anecdote and benchmark, and note a source that may be out of date for the current version.",
    synthesize:
      "Write a technical explanation: how it works, the options and their trade-offs, which versions each point applies to, and practical recommendations with the conditions under which they hold.",
  },
  news: {
    label: "news research",
    search:
      "Look for recent reporting by established outlets, official statements and primary sources; put dates or the year in the query and prefer the newest coverage.",
    analyze:
      "Establish what happened, when (dates as precise as the sources give them), who was involved and where, and what is confirmed as opposed to reported or disputed. " +
      "Note each source's publication date, prefer the most recent for a developing story, and flag a claim that only one outlet makes.",
    synthesize:
      "Write a news brief: the key facts first (what, when, who, where), then the background and the reactions, then what comes next. " +
      "Date each development and say what is still unconfirmed.",
  },
};

/** The sources kept so far, numbered as the report cites them ([1] first); "(none)" when there are none. */
export function renderSources(sources: readonly HaloCitation[]): string {
  if (sources.length === 0) return "(none)";
  return sources
    .map((s, i) => `[${i + 1}] ${s.title} — ${s.url ?? s.path ?? ""}${s.snippet ? `\n    ${s.snippet}` : ""}`)
    .join("\n");
}

/**
 * What the search node's model writes: one flat object, every field present (those the action
 * does not use empty), so strict structured output accepts it; a tool's arguments travel as JSON
 * text. The refinements hold what the flat shape cannot say, so a reply breaking one gets the
 * model port's validation retry.
 */
export const SearchDraft = z
  .object({
    action: z.enum(["tool", "answer"]),
    text: z.string().max(LIMITS.maxTextChars),
    tool: z.string().max(80),
    arguments_json: z.string().max(30_000),
  })
  .superRefine((d, ctx) => {
    if (d.action === "answer" && d.text.trim().length === 0)
      ctx.addIssue({
        code: "custom",
        path: ["text"],
        message: "action answer needs the text of what the search found",
      });
    if (d.action === "tool" && parseToolArguments(d.arguments_json) === null)
      ctx.addIssue({ code: "custom", path: ["arguments_json"], message: "arguments_json must be a JSON object" });
  });
export type SearchDraft = z.infer<typeof SearchDraft>;

/** The search node's user prompt: the brief, the scenario, what was found so far, and the tools while rounds are left. */
export function renderSearch(input: ResearchSearchRequest): string {
  const guide = SCENARIOS[input.scenario];
  const depth = RESEARCH_DEPTHS[input.depth];
  const next =
    input.search_rounds_left === 0
      ? "No search rounds are left: end the search now with action answer, saying what was found."
      : `Search rounds left: ${input.search_rounds_left}\n\nTools you may call:\n${renderTools(input.tools)}`;
  return [
    renderBrief(input.brief),
    `Scenario: ${guide.label}. ${guide.search}`,
    `Depth: ${input.depth} (up to ${depth.searchIterations} search round(s), ${depth.sourcesKept} sources kept).`,
    `Sources kept so far:\n${renderSources(input.sources)}`,
    renderObservations(input.observations),
    next,
  ]
    .filter(Boolean)
    .join("\n\n");
}

/**
 * The draft as the node's action: a tool the agent was not offered is the model's fault; a handoff
 * goes to the workflow, which decides it, and so does a search called with no rounds left (the
 * workflow then ends the search at its depth and the research goes on with what was found).
 */
export function toSearchAction(d: SearchDraft, input: ResearchSearchRequest): AgentAction {
  if (d.action === "answer") return { action: "answer", text: d.text };
  return draftToolCall(d, input.tools, "research");
}

/** search: one structured model call, never streamed (STREAMING_CONFIG.search_agent). */
export async function search(
  input: ResearchSearchRequest,
  ctx: Pick<HandlerContext, "complete">,
): Promise<AgentAction> {
  const draft = await ctx.complete({
    schema: SearchDraft,
    schemaName: "researcher_search",
    prompt: renderSearch(input),
  });
  return toSearchAction(draft, input);
}

/** The search's notes, oldest first; "(none)" when the search brought back nothing. */
function renderNotes(notes: readonly string[]): string {
  return notes.length ? notes.map((n, i) => `Note ${i + 1}:\n${n}`).join("\n\n") : "(none)";
}

/** The analyze node's user prompt: the brief, the scenario's guidance, the sources and the search's notes. */
export function renderAnalyze(input: ResearchAnalyzeRequest): string {
  const guide = SCENARIOS[input.scenario];
  return [
    renderBrief(input.brief),
    `Scenario: ${guide.label}. What to analyse: ${guide.analyze}`,
    `Sources:\n${renderSources(input.sources)}`,
    `Search notes, oldest first:\n${renderNotes(input.notes)}`,
  ].join("\n\n");
}

/** The synthesize node's user prompt: the brief, the scenario's guidance, the sources and the analysis. */
export function renderSynthesize(input: ResearchSynthesizeRequest): string {
  const guide = SCENARIOS[input.scenario];
  return [
    renderBrief(input.brief),
    `Scenario: ${guide.label}. How to synthesize: ${guide.synthesize}`,
    `Sources:\n${renderSources(input.sources)}`,
    `Analysis:\n${input.analysis}`,
  ].join("\n\n");
}

/** The finalize node's user prompt: the brief, the scenario, the sources in citation order and the synthesis. */
export function renderFinalize(input: ResearchFinalizeRequest): string {
  const cite = input.sources.length
    ? `Cite them as [1] to [${input.sources.length}], in this order.`
    : "No sources were found: cite none and say so.";
  return [
    renderBrief(input.brief),
    `Scenario: ${SCENARIOS[input.scenario].label}.`,
    `Sources:\n${renderSources(input.sources)}\n${cite}`,
    `Synthesis:\n${input.synthesis}`,
  ].join("\n\n");
}
