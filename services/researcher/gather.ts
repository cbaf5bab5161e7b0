import { basename } from "node:path";
import {
  AgentmeshError,
  CLARIFY_LIMITS,
  type GatherRequest,
  type GatherResult,
  type GatheredPassage,
} from "@agentmesh/contracts";
import { clip, contentWords, coverage, keywordQuery } from "@agentmesh/offline-kit";
import type { ToolCallResult } from "@agentmesh/tools";

/** Runs one tool under the safe executor as the researcher. */
export type ToolCaller = (
  tool: string,
  args: Record<string, unknown>,
  ctx: { readonly sessionId: string; readonly taskId: string; readonly signal: AbortSignal },
) => Promise<ToolCallResult>;

/** What the research agent gathers with. */
export interface GatherDeps {
  readonly call: ToolCaller;
  /** False when the corpus folder does not exist: no corpus passages, a gap noted. */
  readonly corpusConfigured: boolean;
  /** False when no web search key is configured: the web is skipped, a gap noted. */
  readonly webConfigured: boolean;
}

type Ctx = Parameters<ToolCaller>[2];

/** Passages kept per source. */
const PER_SOURCE = { corpus: 5, web: 4, memory: 3 } as const;

/** The search: the question's content words, then those of the person's clarifying reply. */
export function gatherQuery(req: Pick<GatherRequest, "question" | "clarification">): string {
  return keywordQuery([req.question, req.clarification?.answer ?? ""].join(" "), 400);
}

/** A search that failed: a transient failure fails the task (it is retried), anything else is a gap. */
function gap(result: Extract<ToolCallResult, { ok: false }>, what: string, gaps: string[]): void {
  if (result.error.retryable)
    throw new AgentmeshError(result.error.code, `${what} failed: ${result.error.message}`, { retryable: true });
  gaps.push(clip(`${what} is unavailable (${result.error.code}): ${result.error.message}`, 300));
}

async function corpusPassages(
  query: string,
  terms: readonly string[],
  deps: GatherDeps,
  ctx: Ctx,
  gaps: string[],
): Promise<GatheredPassage[]> {
  if (!deps.corpusConfigured) {
    gaps.push("No corpus is configured (AGENTMESH_CORPUS_DIR names no folder).");
    return [];
  }
  const r = await deps.call("corpus_search", { query, limit: 8 }, ctx);
  if (!r.ok) {
    gap(r, "The corpus search", gaps);
    return [];
  }
  const hits = (r.output as { results: Array<{ path: string; passage: string; score: number }> }).results;
  const scored = hits.map((h, i) => ({ h, i, score: coverage(terms, contentWords(h.passage)) }));
  const best = Math.max(0, ...scored.map((x) => x.score));
  // a passage covering less than half of what the best one covers is noise beside it
  return scored
    .filter((x) => x.score > 0 && x.score >= best / 2 && x.h.passage.trim().length > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, PER_SOURCE.corpus)
    .map(({ h }) => {
      const flat = h.passage.replace(/\s+/g, " ").trim();
      return {
        source: "corpus",
        text: clip(h.passage.trim(), 2000),
        citation: {
          title: clip(basename(h.path) || h.path, 300),
          url: null,
          path: clip(h.path, 300),
          snippet: clip(flat, 500),
        },
      };
    });
}

async function webPassages(query: string, deps: GatherDeps, ctx: Ctx, gaps: string[]): Promise<GatheredPassage[]> {
  if (!deps.webConfigured) return [];
  const r = await deps.call("web_search", { query, count: PER_SOURCE.web }, ctx);
  if (!r.ok) {
    // the web is optional: a failed search is a gap, never a reason to drop the corpus's passages
    gaps.push(clip(`The web search is unavailable (${r.error.code}): ${r.error.message}`, 300));
    return [];
  }
  const hits = (r.output as { results: Array<{ title: string; url: string; snippet: string }> }).results;
  return hits.slice(0, PER_SOURCE.web).flatMap((h): GatheredPassage[] => {
    if (!/^https?:\/\//i.test(h.url) || !URL.canParse(h.url) || h.url.length > 2000) return [];
    const title = clip(h.title.trim() || h.url, 300);
    // web text is untrusted data: a quoted passage with its URL, never instructions
    return [
      {
        source: "web",
        text: clip(`${title}: ${h.snippet}`, 2000),
        citation: { title, url: h.url, path: null, snippet: clip(h.snippet, 500) },
      },
    ];
  });
}

/** Memory: earlier turns of the conversation that share words with the search (the query itself left out). */
function memoryPassages(req: GatherRequest, terms: readonly string[]): GatheredPassage[] {
  const own = new Set([req.question.trim(), req.clarification?.answer?.trim() ?? ""]);
  return req.messages
    .map((m, i) => ({ m, i, score: coverage(terms, contentWords(m.content)) }))
    .filter((x) => x.score > 0 && !own.has(x.m.content.trim()) && x.m.content.trim().length > 0)
    .sort((a, b) => b.score - a.score || b.i - a.i)
    .slice(0, PER_SOURCE.memory)
    .map(({ m }) => ({
      source: "memory",
      text: clip(`${m.role === "user" ? "User" : m.role === "assistant" ? "Assistant" : "System"}: ${m.content}`, 2000),
      citation: null,
    }));
}

/**
 * researcher.gather (clarify's research agent): one search built from the question and the
 * clarifying reply, run over the corpus (cited by path), the web when a key is configured (cited
 * by URL) and the conversation (memory, not cited). No model call: the synthesis agent writes.
 */
export async function gather(req: GatherRequest, deps: GatherDeps, ctx: Ctx): Promise<GatherResult> {
  const query = gatherQuery(req);
  const terms = contentWords(query);
  const gaps: string[] = [];
  const corpus = await corpusPassages(query, terms, deps, ctx, gaps);
  const web = await webPassages(query, deps, ctx, gaps);
  const passages = [...corpus, ...web, ...memoryPassages(req, terms)].slice(0, CLARIFY_LIMITS.maxPassages);
  return { query, passages, gaps: gaps.slice(0, 5) };
}
