import {
  AgentmeshError,
  BLACKBOARD_LIMITS,
  type CorpusRanking,
  type MemoryState,
  type OpRequest,
  type RetrievalBundle,
} from "@agentmesh/contracts";
import type { ToolCallResult } from "@agentmesh/tools";
import { clipText as clip } from "@agentmesh/tools";
import { contentWords, coverage, firstSentence } from "./text.js";

type Item = RetrievalBundle["items"][number];
type Request = OpRequest<"retriever", "retrieve">;

/** Runs one tool under the safe executor as the retriever role. */
export type ToolCaller = (
  tool: string,
  args: Record<string, unknown>,
  ctx: { readonly sessionId: string; readonly taskId: string; readonly signal: AbortSignal },
) => Promise<ToolCallResult>;

/** What the retriever searches with. */
export interface RetrieverDeps {
  readonly call: ToolCaller;
  /** False when no web search provider is configured: the web strategy then returns nothing, without failing. */
  readonly webConfigured: boolean;
  /** False when the corpus folder does not exist: `answer` from the corpus fails `tool_unavailable`. */
  readonly corpusConfigured: boolean;
}

/** Memory items kept per retrieval, so session notes never crowd out the sources. */
const MAX_MEMORY_ITEMS = 5;
const round3 = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Memory strategy: the session's short-term items (not the question's own record) and the
 * thread's long-term references that share words with the query, the best first (a tie goes to
 * the newer: short-term items after the references, each list oldest first).
 */
export function fromMemory(query: string, memory: MemoryState): Item[] {
  const terms = contentWords(query);
  const notes = memory.short_term.filter((m) => m.kind !== "query" && m.kind !== "perception").map((m) => m.content);
  return [...memory.long_term_refs, ...notes]
    .map((content, i) => ({ content, i, score: coverage(terms, contentWords(content)) }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || b.i - a.i)
    .slice(0, MAX_MEMORY_ITEMS)
    .map(({ content, score }) => ({
      source: "memory" as const,
      content,
      relevance: round3(score),
      citation: null,
    }));
}

/** One corpus_search result as the retriever reads it (`cosine` only from a hybrid search). */
type Hit = {
  readonly path: string;
  readonly passage: string;
  readonly score: number;
  readonly cosine?: number | null;
};

/** What corpus_search answers: its results and how they were ranked. */
export type CorpusSearchOutput = {
  readonly results: Hit[];
  readonly ranking?: CorpusRanking["method"];
  readonly ranking_note?: string;
};

/** How a corpus search ranked, for the bundle (an older tool that does not say was BM25). */
export const corpusRankingOf = (o: CorpusSearchOutput): CorpusRanking => ({
  method: o.ranking ?? "bm25",
  note: clip(o.ranking_note ?? "", 300),
});

/**
 * Relevance of corpus hits: how well a passage matches the query, weighted by its search score
 * relative to the best hit (a weak best hit stays weak; the score alone would make it 1). The
 * match is the larger of the share of the query's words the passage covers and, from a hybrid
 * search, the passage's cosine with the query: a passage found by meaning is not worth 0 for
 * sharing no word.
 */
export function rankHits(query: string, hits: readonly Hit[]): Item[] {
  const terms = contentWords(query);
  const best = Math.max(0, ...hits.map((h) => h.score));
  return hits.map((h) => {
    const passage = h.passage.replace(/\s+/g, " ").trim();
    const match = Math.max(coverage(terms, contentWords(passage)), Math.min(1, Math.max(0, h.cosine ?? 0)));
    const relevance = best > 0 ? match * (0.6 + 0.4 * (h.score / best)) : 0;
    return {
      source: "corpus" as const,
      content: clip(passage, 1000),
      relevance: round3(relevance),
      citation: { path: clip(h.path, 300), passage: clip(passage, 500) },
    };
  });
}

type WebHit = { readonly title: string; readonly url: string; readonly snippet: string };

function rankWeb(query: string, hits: readonly WebHit[]): Item[] {
  const terms = contentWords(query);
  return hits.map((h, i) => {
    const text = clip(`${h.title}: ${h.snippet}`, 1000);
    // web text is untrusted data: kept as content with its URL, never followed as instructions
    return {
      source: "web" as const,
      content: text,
      relevance: round3(coverage(terms, contentWords(text)) * (1 - i * 0.05)),
      citation: { path: clip(h.url, 300), passage: clip(h.snippet || h.title || h.url, 500) },
    };
  });
}

/** A failed search: a transient failure fails the task (it is retried); anything else is a gap, noted. */
function failed(result: Extract<ToolCallResult, { ok: false }>, what: string, gaps: string[]): void {
  if (result.error.retryable)
    throw new AgentmeshError(result.error.code, `${what} failed: ${result.error.message}`, { retryable: true });
  gaps.push(clip(`${what} is unavailable (${result.error.code}): ${result.error.message}`, 300));
}

/**
 * retriever.retrieve: memory word overlap, corpus_search with citations (hybrid or BM25, as the
 * bundle's `corpus_ranking` says), web search when configured.
 */
export async function retrieve(
  req: Request,
  deps: RetrieverDeps,
  ctx: Parameters<ToolCaller>[2],
): Promise<RetrievalBundle> {
  const items: Item[] = [];
  const gaps: string[] = [];
  let corpusRanking: CorpusRanking | null = null;
  const keywords = contentWords(req.query).join(" ");
  const searchWith = keywords.length >= 3 ? keywords : req.query;
  if (req.strategies.includes("memory")) items.push(...fromMemory(req.query, req.memory));
  if (req.strategies.includes("corpus")) {
    const r = await deps.call("corpus_search", { query: searchWith, limit: Math.min(req.max_items, 8) }, ctx);
    if (r.ok) {
      const found = r.output as CorpusSearchOutput;
      items.push(...rankHits(req.query, found.results));
      corpusRanking = corpusRankingOf(found);
    } else failed(r, "The corpus search", gaps);
  }
  if (req.strategies.includes("web") && deps.webConfigured) {
    const r = await deps.call("web_search", { query: clip(searchWith, 400), count: 5 }, ctx);
    if (r.ok) items.push(...rankWeb(req.query, (r.output as { results: WebHit[] }).results));
    else failed(r, "The web search", gaps);
  }
  const ranked = items
    .map((item, i) => ({ item, i }))
    .sort((a, b) => b.item.relevance - a.item.relevance || a.i - b.i)
    .map((x) => x.item)
    .slice(0, Math.min(req.max_items, BLACKBOARD_LIMITS.maxRetrievedItems));
  const top = ranked.filter((i) => i.source !== "memory").slice(0, 3);
  const summary = top.length
    ? top.map((i) => `${i.citation?.path ?? i.source}: ${firstSentence(i.content, 400)}`).join(" ")
    : ranked
        .map((i) => i.content)
        .slice(0, 3)
        .join(" ");
  const found = ranked.flatMap((i) => contentWords(i.content));
  const missing = contentWords(req.query).filter((t) => coverage([t], found) === 0);
  if (ranked.length === 0) gaps.push(clip(`No source mentions: ${req.query}`, 300));
  else if (missing.length) gaps.push(clip(`Nothing retrieved about: ${missing.join(", ")}`, 300));
  return {
    items: ranked,
    summary: clip(summary, 2000),
    open_questions: gaps.slice(0, 10),
    corpus_ranking: corpusRanking,
  };
}
