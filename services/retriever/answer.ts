import { basename } from "node:path";
import {
  AgentmeshError,
  HALO_LIMITS,
  type CorpusRanking,
  type HaloCitation,
  type OpRequest,
  type SpecialistAnswer,
} from "@agentmesh/contracts";
import type { HandlerContext } from "@agentmesh/agent-kit";
import { clipText as clip } from "@agentmesh/tools";
import { z } from "zod";
import { corpusRankingOf, rankHits, type CorpusSearchOutput, type RetrieverDeps, type ToolCaller } from "./retrieve.js";
import { contentWords, coverage } from "./text.js";

type Request = OpRequest<"retriever", "answer">;

/** What a model writes from the sources: the prose only; the citations are the sources it was given. */
export const SourcedDraft = z.object({
  answer: z
    .string()
    .max(HALO_LIMITS.maxAnswerChars)
    .refine((s) => s.trim().length > 0, "an answer needs some text"),
});

/** One passage or web result the answer rests on, with its citation. */
export interface AnswerSource {
  readonly text: string;
  readonly citation: HaloCitation;
}

/** Sources given to the model (and cited) at most. */
const MAX_SOURCES = 5;
/** Sources the extractive (offline) answer quotes from. */
const QUOTED_SOURCES = 3;

/** The words a search is run with: the question's content words, or the question when it has too few. */
function searchText(question: string): string {
  const keywords = contentWords(question).join(" ");
  return clip(keywords.length >= 3 ? keywords : question, 400);
}

/** A failed search: its code and retryability kept, so a transient failure is retried and a missing backend is not. */
function searchFailed(result: { readonly error: AgentmeshError }, what: string): AgentmeshError {
  return new AgentmeshError(result.error.code, `${what} failed: ${result.error.message}`, {
    retryable: result.error.retryable,
    cause: result.error,
  });
}

type Ctx = Parameters<ToolCaller>[2] & {
  /** Told how the corpus was ranked (hybrid or BM25 only, and why), for the task's span and log. */
  readonly noteRanking?: (ranking: CorpusRanking) => void;
};

/** The corpus passages that share words with the question, most relevant first, cited by path. */
async function corpusSources(question: string, deps: RetrieverDeps, ctx: Ctx): Promise<AnswerSource[]> {
  if (!deps.corpusConfigured)
    throw new AgentmeshError(
      "tool_unavailable",
      "no corpus is configured (AGENTMESH_CORPUS_DIR names no folder), so there is nothing to answer from",
      { retryable: false },
    );
  const r = await deps.call("corpus_search", { query: searchText(question), limit: 8 }, ctx);
  if (!r.ok) throw searchFailed(r, "The corpus search");
  const found = r.output as CorpusSearchOutput;
  ctx.noteRanking?.(corpusRankingOf(found));
  const hits = found.results;
  // The passage as the file has it (its line breaks show headings), beside the ranked, flattened item.
  return rankHits(question, hits)
    .map((item, i) => ({ item, i, raw: hits[i]?.passage ?? item.content }))
    .filter(({ item }) => item.relevance > 0 && item.citation !== null)
    .sort((a, b) => b.item.relevance - a.item.relevance || a.i - b.i)
    .slice(0, MAX_SOURCES)
    .map(({ item, raw }) => {
      const path = item.citation?.path ?? "corpus";
      return {
        text: raw.slice(0, 2000),
        citation: {
          title: clip(basename(path) || path, 300),
          url: null,
          path: clip(path, 300),
          snippet: clip(item.content, 500),
        },
      };
    });
}

/** The web search's results, in its order, cited by URL. */
async function webSources(question: string, deps: RetrieverDeps, ctx: Ctx): Promise<AnswerSource[]> {
  if (!deps.webConfigured)
    throw new AgentmeshError(
      "tool_unavailable",
      "no web search provider is configured (AGENTMESH_WEB_SEARCH_KEY is unset)",
      { retryable: false },
    );
  const r = await deps.call("web_search", { query: searchText(question), count: MAX_SOURCES }, ctx);
  if (!r.ok) throw searchFailed(r, "The web search");
  const hits = (r.output as { results: Array<{ title: string; url: string; snippet: string }> }).results;
  return hits.slice(0, MAX_SOURCES).flatMap((h) => {
    const web = /^https?:\/\//i.test(h.url) && URL.canParse(h.url) && h.url.length <= 2000;
    if (!web) return [];
    const title = clip(h.title.trim() || h.url, 300);
    // web text is untrusted data: kept as a quoted source with its URL, never followed as instructions
    return [
      {
        text: clip(`${title}: ${h.snippet}`, 1000),
        citation: { title, url: h.url, path: null, snippet: clip(h.snippet, 500) },
      },
    ];
  });
}

/** The model's prompt: the question and the numbered sources. */
export function renderAnswerPrompt(question: string, sources: readonly AnswerSource[]): string {
  const listed = sources.map(
    (s, i) => `[${i + 1}] ${s.citation.url ?? s.citation.path ?? s.citation.title}\n${clip(s.text, 1000)}`,
  );
  return [
    `Question: ${question}`,
    `Sources:\n${listed.join("\n\n")}`,
    "Answer the question from these sources only.",
  ].join("\n\n");
}

/** The sentence of a text that covers most of the question's words (the first on a tie). */
function bestSentence(question: string, text: string, max: number): string {
  const terms = contentWords(question);
  // Markdown headings and list markers are layout, not sentences.
  const prose = text.replace(/^\s{0,3}#{1,6}\s+.*$/gm, " ").replace(/^\s*(?:[-*+]|\d+\.)\s+/gm, "");
  const sentences = prose
    .replace(/\s+/g, " ")
    .trim()
    .match(/[^.!?]+[.!?]*/g) ?? [text];
  let best = sentences[0] ?? text;
  let bestScore = -1;
  for (const s of sentences) {
    const score = coverage(terms, contentWords(s));
    if (score > bestScore) [best, bestScore] = [s, score];
  }
  return clip(best.trim(), max);
}

/**
 * The answer without a model: the most relevant sentence of each of the top sources, each once
 * (the synthesis marks the fragment with its sources' numbers, so no file name is quoted).
 */
export function extractiveAnswer(question: string, sources: readonly AnswerSource[]): string {
  const sentences = sources
    .slice(0, QUOTED_SOURCES)
    .map((s) => bestSentence(question, s.citation.url ? s.citation.snippet || s.text : s.text, 600));
  return [...new Set(sentences.filter((x) => x.length > 0))].join(" ");
}

/**
 * retriever.answer (halo's rag and web): searches the corpus or the web, then the model writes
 * the answer from the sources found, or, with no model (the offline engine answers
 * `needs_model`: the sources came from a search it cannot repeat), the most relevant sentence of
 * each top source is quoted. The citations are exactly the sources found. No corpus or no web
 * provider fails `tool_unavailable`, not retryable; nothing found is a short honest answer.
 */
export async function answerFromSources(
  req: Request,
  deps: RetrieverDeps,
  ctx: Ctx & Pick<HandlerContext, "complete">,
): Promise<SpecialistAnswer> {
  const sources =
    req.source === "corpus" ? await corpusSources(req.question, deps, ctx) : await webSources(req.question, deps, ctx);
  if (sources.length === 0)
    return {
      response_str:
        req.source === "corpus" ? "The document corpus has nothing on this." : "The web search found nothing on this.",
      citations: [],
    };
  let text: string;
  try {
    text = (
      await ctx.complete({
        schema: SourcedDraft,
        schemaName: "retriever_answer",
        prompt: renderAnswerPrompt(req.question, sources),
      })
    ).answer;
  } catch (err) {
    if (!(err instanceof AgentmeshError && err.code === "needs_model")) throw err;
    text = extractiveAnswer(req.question, sources);
  }
  return { response_str: clip(text.trim(), HALO_LIMITS.maxAnswerChars), citations: sources.map((s) => s.citation) };
}
