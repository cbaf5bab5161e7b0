import { AgentmeshError, type Citation, type OpRequest } from "@agentmesh/contracts";
import type { HandlerContext } from "@agentmesh/agent-kit";
import { clipText as clip } from "@agentmesh/tools";
import { z } from "zod";

// The blackboard's RAG strategy: the passages corpus_search found, then an answer the model
// writes from them, referencing each passage it uses as [n]. docs/retrieval.md states the rules.

type ExecuteRequest = OpRequest<"executor", "execute">;

/** What the model writes for a RAG step: the answer, with [n] references to the numbered passages. */
export const RagDraft = z.object({
  answer: z
    .string()
    .max(3000)
    .refine((s) => s.trim().length > 0, "an answer needs some text"),
});

/** One corpus_search result as the RAG step reads it. */
export interface RagPassage {
  readonly id?: string;
  readonly path: string;
  readonly passage: string;
}

/** What corpus_search answered: its results and how they were ranked (an older tool says neither). */
export interface RagSearch {
  readonly results: readonly RagPassage[];
  readonly ranking?: "hybrid" | "bm25";
  readonly ranking_note?: string;
}

/** A RAG step's output text and the passages it cites. */
export interface RagOutput {
  readonly text: string;
  readonly citations: Citation[];
}

/** Said when no language model is configured: the step keeps the passages as they were found. */
export const RAG_OFFLINE_NOTE =
  "No language model is configured, so no answer was generated: these are the passages as retrieved.";

/** At most `max` characters, cut rather than clipped: line breaks stay (clipping flattens them). */
const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

const idOf = (p: RagPassage, n: number) => p.id ?? `${p.path} (passage ${n})`;

/** One line saying how the passages were ranked. */
export function rankingLine(search: RagSearch): string {
  return search.ranking === "hybrid"
    ? "Passages ranked hybrid: BM25 and embedding similarity, fused by reciprocal rank."
    : `Passages ranked by ${search.ranking_note || "BM25 only"}.`;
}

/** The model's prompt: the question, the step, and the numbered passages with their ids. */
export function renderRagPrompt(req: ExecuteRequest, passages: readonly RagPassage[]): string {
  return [
    `Question: ${req.question}`,
    `Plan step: ${req.step.description}`,
    `Passages (cite as [n]):\n${passages.map((p, i) => `[${i + 1}] ${idOf(p, i + 1)}\n${clip(p.passage, 1200)}`).join("\n\n")}`,
    "RAG step: answer the step from these passages only. Reference every passage you use as [n] with its number. If they do not answer it, say so and say what they do say.",
  ].join("\n\n");
}

/** The passage numbers an answer references (`[2]`, `[1, 3]`), each once, in order of first mention; numbers past `count` are ignored. */
export function referencedPassages(answer: string, count: number): number[] {
  const out: number[] = [];
  for (const m of answer.matchAll(/\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]/g))
    for (const n of (m[1] ?? "").split(",").map((x) => Number(x.trim())))
      if (n >= 1 && n <= count && !out.includes(n)) out.push(n);
  return out;
}

const citationOf = (p: RagPassage): Citation[] => {
  const path = clip(p.path, 300);
  const passage = clip(p.passage, 500);
  return path && passage ? [{ path, passage }] : [];
};

/** The passages as found, one per line, as the step's text was before any model wrote from them. */
export function passagesText(passages: readonly RagPassage[]): string {
  return passages.map((h, i) => `[${i + 1}] ${h.path}: ${clip(h.passage, 700)}`).join("\n");
}

/** Today's output with the reason no answer was generated, all passages cited. */
function asRetrieved(search: RagSearch, why: string): RagOutput {
  const passages = search.results.slice(0, 10);
  const note = `${rankingLine(search)} ${why}`;
  const body = cut(passagesText(passages), 4000 - note.length - 1);
  return { text: `${body}\n${note}`, citations: passages.flatMap(citationOf) };
}

/**
 * The RAG step's output: with a model, its answer from the passages followed by the ids of the
 * passages it references, which are the citations (all passages when it references none, since
 * it was given nothing else); without one (`needs_model`), or when the model fails, the passages
 * as retrieved, saying so. A cancelled or timed-out task still fails.
 */
export async function ragOutput(
  req: ExecuteRequest,
  search: RagSearch,
  ctx: Pick<HandlerContext, "complete" | "signal">,
): Promise<RagOutput> {
  const passages = search.results.slice(0, 10);
  if (passages.length === 0)
    return { text: `The corpus has no passage on this. ${rankingLine(search)}`, citations: [] };
  let answer: string;
  try {
    answer = (
      await ctx.complete({ schema: RagDraft, schemaName: "executor_rag", prompt: renderRagPrompt(req, passages) })
    ).answer;
  } catch (err) {
    if (ctx.signal.aborted || !(err instanceof AgentmeshError)) throw err;
    if (err.code === "needs_model") return asRetrieved(search, RAG_OFFLINE_NOTE);
    return asRetrieved(search, clip(`The model could not write an answer (${err.code}): ${err.message}`, 300));
  }
  const referenced = referencedPassages(answer, passages.length);
  const numbered = passages.map((p, i) => ({ p, n: i + 1 }));
  const used = referenced.length > 0 ? numbered.filter((x) => referenced.includes(x.n)) : numbered;
  used.sort((a, b) => referenced.indexOf(a.n) - referenced.indexOf(b.n));
  const sources = `Sources: ${used.map(({ p, n }) => `[${n}] ${idOf(p, n)}`).join(", ")}`;
  const tail = `\n\n${clip(sources, 800)}\n${rankingLine(search)}`;
  return {
    text: `${cut(answer.trim(), 4000 - tail.length)}${tail}`,
    citations: used.flatMap(({ p }) => citationOf(p)),
  };
}
