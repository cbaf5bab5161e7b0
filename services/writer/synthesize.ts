import type { GatheredPassage, SynthesizeRequest } from "@agentmesh/contracts";
import { clip, contentWords, coverage, needsModel, sentencesOf } from "@agentmesh/offline-kit";

/** Cited passages quoted by the offline answer. */
const QUOTED = 3;

/** The passages as numbered: cited ones `[n]` in order, memory ones as notes. */
function numbered(passages: readonly GatheredPassage[]): {
  sources: Array<{ n: number; p: GatheredPassage }>;
  notes: GatheredPassage[];
} {
  const sources = passages.filter((p) => p.citation !== null).map((p, i) => ({ n: i + 1, p }));
  return { sources, notes: passages.filter((p) => p.citation === null) };
}

/** What the question asks, with the clarification the person gave. */
function asked(i: Pick<SynthesizeRequest, "question" | "clarification">): string {
  const c = i.clarification;
  return c?.answer
    ? `Question: ${i.question}\nWe asked: ${c.question}\nThe user answered: ${c.answer}`
    : `Question: ${i.question}`;
}

/** The synthesis agent's user prompt: the question and clarification, the numbered sources, the conversation notes. */
export function renderSynthesize(i: SynthesizeRequest): string {
  const { sources, notes } = numbered(i.passages);
  const listed = sources.map(
    ({ n, p }) => `[${n}] ${p.citation?.url ?? p.citation?.path ?? p.citation?.title ?? ""}\n${clip(p.text, 1500)}`,
  );
  return [
    asked(i),
    `Sources:\n${listed.join("\n\n") || "(none found)"}`,
    notes.length ? `Conversation notes (context, not sources):\n${notes.map((n) => clip(n.text, 500)).join("\n")}` : "",
    "Write the answer, citing the sources as [n].",
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** The sentence of a passage that covers most of the search words (the first on a tie), without layout. */
function bestSentence(terms: readonly string[], text: string): string {
  const prose = text.replace(/^\s{0,3}#{1,6}\s+.*$/gm, " ").replace(/^\s*(?:[-*+]|\d+\.)\s+/gm, "");
  const sentences = sentencesOf(prose);
  let best = sentences[0] ?? prose.trim();
  let score = -1;
  for (const s of sentences) {
    const c = coverage(terms, contentWords(s));
    if (c > score) [best, score] = [s, c];
  }
  return clip(best.trim(), 600);
}

const noSources = needsModel("synthesis agent", "answer a question the research found no source for");

/**
 * The offline answer: the most relevant sentence of each of the top cited passages, each marked
 * with its number; with no cited passage it answers `needs_model` rather than a made-up answer.
 */
export function offlineSynthesis(i: SynthesizeRequest, ctx: { readonly configHint: string }): string {
  const { sources } = numbered(i.passages);
  if (sources.length === 0) return noSources(i, ctx);
  const terms = contentWords([i.question, i.clarification?.answer ?? ""].join(" "));
  const lines = sources.slice(0, QUOTED).map(({ n, p }) => `${bestSentence(terms, p.text)} [${n}]`);
  const lead = i.clarification?.answer
    ? `You asked “${clip(i.question.trim(), 200)}” and clarified “${clip(i.clarification.answer.trim(), 200)}”. The sources say:`
    : "The sources say:";
  return [lead, ...[...new Set(lines)].map((l) => `- ${l}`)].join("\n");
}
