import { AgentmeshError, Citation, type OpRequest, type SummarizeContext } from "@agentmesh/contracts";
import { z } from "zod";
import { classifyQuestion, clipText, contentWords, coverage, sentencesOf } from "@agentmesh/offline-kit";

// The summarize step's draft, its numbered sources and its offline behaviour.

/**
 * What the model writes for the blackboard's summarize step: the answer, with `[n]` references
 * to the numbered sources it was shown, and the citations it used. The executor asks for this
 * shape and turns it into the step's result.
 */
export const SummaryDraft = z.object({
  answer: z.string().min(1).max(4000),
  citations: z.array(Citation).max(10),
});
export type SummaryDraft = z.infer<typeof SummaryDraft>;

/** Retrieval items at least this relevant join the answer's sources (the workflow's rule too). */
const RELEVANT = 0.5;

const same = (a: Citation, b: Citation) => a.path === b.path && a.passage === b.passage;

/**
 * The numbered sources of a summarize step, in the order the final answer lists them: the
 * accepted steps' citations, then relevant corpus passages from retrieval.
 */
export function numberedSources(ctx: SummarizeContext): Citation[] {
  const out: Citation[] = [];
  const fromSteps = ctx.results.flatMap((r) => r.citations);
  const fromRetrieval = (ctx.retrieval?.items ?? []).flatMap((i) =>
    i.source === "corpus" && i.citation && i.relevance >= RELEVANT ? [i.citation] : [],
  );
  for (const c of [...fromSteps, ...fromRetrieval]) if (!out.some((x) => same(x, c))) out.push(c);
  return out.slice(0, 10);
}

/** The sentences of a passage that best match the question, up to `max` characters. */
function bestExcerpt(passage: string, terms: readonly string[], max: number): string {
  // Markdown headings and bullets arrive flattened into the passage; their markers are noise in a quote.
  const sentences = sentencesOf(passage.replace(/(^|\s)(?:#{1,6}|[-*])\s+/g, "$1"));
  const scored = sentences.map((s, i) => ({ s, i, score: coverage(terms, contentWords(s)) }));
  const ranked = [...scored].sort((a, b) => b.score - a.score || a.i - b.i);
  const picked: typeof scored = [];
  let length = 0;
  for (const c of ranked) {
    if (picked.length > 0 && (c.score === 0 || length + c.s.length > max)) continue;
    picked.push(c);
    length += c.s.length + 1;
  }
  return clipText(
    picked
      .sort((a, b) => a.i - b.i)
      .map((c) => c.s)
      .join(" "),
    max,
  );
}

/** executor.execute for the summarize step: the last calculator value, or quoted passages with [n] references. */
export function summarizeOffline(input: OpRequest<"executor", "execute">): SummaryDraft {
  const ctx = input.context;
  if (!ctx) throw new AgentmeshError("internal", "offline engine: the summarize step came without its context");
  const q = classifyQuestion(input.question);
  const parts: string[] = [];
  const cited: Citation[] = [];
  if (q.kind === "greeting")
    parts.push(
      "Hello! I'm agentmesh, running offline: I can compute arithmetic exactly and answer questions from the local document corpus, with citations.",
    );
  const calc = [...ctx.results].reverse().find((r) => r.tool === "calculator");
  if (calc) {
    const value = calc.output.trim();
    parts.push(
      q.kind === "arithmetic" && q.calc.ok ? `${q.calc.expression} = ${value}` : `The calculator gives ${value}.`,
    );
  } else {
    const sources = numberedSources(ctx);
    // Accepted steps' sources when there are any; else the top retrieval passages, in order, so the
    // [n] references stay those of the final answer's source list.
    const fromSteps = ctx.results.some((r) => r.citations.length > 0);
    const terms = contentWords(input.question);
    const candidates = sources.map((c, i) => ({ c, n: i + 1, score: coverage(terms, contentWords(c.passage)) }));
    const best = Math.max(0, ...candidates.map((x) => x.score));
    // Only passages about as relevant as the best one: a passage sharing one word is not an answer.
    const picked = fromSteps
      ? [...candidates]
          .sort((a, b) => b.score - a.score || a.n - b.n)
          .filter((x) => x.score > 0 && x.score >= best * 0.6)
          .slice(0, 3)
          .sort((a, b) => a.n - b.n)
      : candidates.slice(0, 3);
    const quoted = new Set<string>();
    for (const { c, n } of picked) {
      const excerpt = bestExcerpt(c.passage, terms, 320);
      if (quoted.has(excerpt)) continue;
      quoted.add(excerpt);
      parts.push(`According to ${c.path}: “${excerpt}” [${n}]`);
      cited.push(c);
    }
  }
  for (const r of ctx.results) {
    if (r.tool === "calculator" || r.citations.length > 0 || r.tool === "corpus_search" || r.tool === "web_search")
      continue;
    parts.push(`${r.tool} returned: ${clipText(r.output, 600)}`);
  }
  for (const reply of ctx.user_replies) parts.push(`You clarified: “${clipText(reply, 300)}”.`);
  if (parts.length === 0 || (parts.length === ctx.user_replies.length && cited.length === 0)) {
    parts.unshift(
      "I found nothing in the results or the sources that answers this, so I give no answer rather than guess.",
    );
  }
  const answer = parts.join("\n");
  return { answer: answer.length <= 4000 ? answer : `${answer.slice(0, 3999)}…`, citations: cited };
}
