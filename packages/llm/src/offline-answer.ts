import { Citation, type CriticReport, type OpRequest, type SummarizeContext } from "@agentmesh/contracts";
import { z } from "zod";
import { sameNumber } from "./calc.js";
import { classifyQuestion } from "./classify.js";
import { ambiguityOf, clipText, contentWords, coverage, intentOf, sentencesOf } from "./blackboard-text.js";
import { AgentmeshError } from "@agentmesh/contracts";

// The offline engine's summarize step (executor.execute on the `summarize` step) and critic.report.

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
  const fromRetrieval = (ctx.retrieval?.items ?? []).flatMap((i) => (i.source === "corpus" && i.citation && i.relevance >= RELEVANT ? [i.citation] : []));
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
  return clipText(picked.sort((a, b) => a.i - b.i).map((c) => c.s).join(" "), max);
}

/** executor.execute for the summarize step: the last calculator value, or quoted passages with [n] references. */
export function summarizeOffline(input: OpRequest<"executor", "execute">): SummaryDraft {
  const ctx = input.context;
  if (!ctx) throw new AgentmeshError("internal", "offline engine: the summarize step came without its context");
  const q = classifyQuestion(input.question);
  const parts: string[] = [];
  const cited: Citation[] = [];
  if (q.kind === "greeting") parts.push("Hello! I'm agentmesh, running offline: I can compute arithmetic exactly and answer questions from the local document corpus, with citations.");
  const calc = [...ctx.results].reverse().find((r) => r.tool === "calculator");
  if (calc) {
    const value = calc.output.trim();
    parts.push(q.kind === "arithmetic" && q.calc.ok ? `${q.calc.expression} = ${value}` : `The calculator gives ${value}.`);
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
      ? [...candidates].sort((a, b) => b.score - a.score || a.n - b.n).filter((x) => x.score > 0 && x.score >= best * 0.6).slice(0, 3).sort((a, b) => a.n - b.n)
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
    if (r.tool === "calculator" || r.citations.length > 0 || r.tool === "corpus_search" || r.tool === "web_search") continue;
    parts.push(`${r.tool} returned: ${clipText(r.output, 600)}`);
  }
  for (const reply of ctx.user_replies) parts.push(`You clarified: “${clipText(reply, 300)}”.`);
  if (parts.length === 0 || (parts.length === ctx.user_replies.length && cited.length === 0)) {
    parts.unshift("I found nothing in the results or the sources that answers this, so I give no answer rather than guess.");
  }
  const answer = parts.join("\n");
  return { answer: answer.length <= 4000 ? answer : `${answer.slice(0, 3999)}…`, citations: cited };
}

type Report = OpRequest<"critic", "report">;

const numbersIn = (text: string): string[] => text.replace(/(\d),(?=\d{3}(?!\d))/g, "$1").match(/-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi) ?? [];
const isNumeric = (text: string): boolean => /^\s*[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[+-]?\d+)?(?:\s+[A-Za-z][\w^/]*)?\s*$/i.test(text) || /^\s*\[[\d\s.,\-+e[\]]+\]\s*$/i.test(text);

function verdict(quality: number, risk: number, issues: string[], extra: Partial<CriticReport> = {}): CriticReport {
  const q = Math.round(Math.min(1, Math.max(0, quality)) * 100) / 100;
  const r = Math.round(Math.min(1, Math.max(0, risk)) * 100) / 100;
  return {
    quality: q,
    hallucination_risk: r,
    issues: issues.map((i) => clipText(i, 300)).slice(0, 20),
    is_acceptable: q >= 0.6 && r <= 0.5,
    rewrite_suggestion: null,
    requires_human_input: false,
    question_for_human: null,
    ...extra,
  };
}

/** Hallucination risk of a final answer: how much of it the sources back. */
function answerRisk(input: Report, answer: string): { risk: number; issues: string[] } {
  const q = classifyQuestion(input.question);
  if (q.kind === "arithmetic" && q.calc.ok && q.calc.exact) {
    const stated = numbersIn(answer).some((n) => sameNumber(n, q.calc.ok ? q.calc.value : ""));
    return stated ? { risk: 0.05, issues: [] } : { risk: 0.9, issues: [`The answer does not state the exact value of ${q.calc.expression}, which is ${q.calc.value}.`] };
  }
  if (q.kind === "greeting") return { risk: 0.05, issues: [] };
  const intent = intentOf(input.question);
  if (input.result.citations.length === 0) {
    if (intent === "lookup" || intent === "explanation" || intent === "comparison") return { risk: 0.7, issues: ["The answer cites no source for a question that needs one."] };
    return { risk: 0.3, issues: ["The answer rests on tool outputs that cannot be re-checked against sources offline."] };
  }
  const evidence = [...input.result.citations.map((c) => c.passage), ...(input.retrieval?.items.map((i) => i.content) ?? []), input.retrieval?.summary ?? ""].join(" ");
  const known = new Set(contentWords(evidence));
  const sentences = sentencesOf(answer.replace(/\[\d+\]/g, " ")).map((s) => contentWords(s)).filter((w) => w.length >= 3);
  if (sentences.length === 0) return { risk: 0.3, issues: [] };
  const backed = sentences.filter((w) => coverage(w, known) >= 0.5).length;
  if (backed === 0) return { risk: 0.9, issues: ["No sentence of the answer is backed by the retrieved passages or the cited sources."] };
  const risk = 0.1 + 0.8 * (1 - backed / sentences.length);
  return { risk, issues: backed < sentences.length ? [`${sentences.length - backed} of ${sentences.length} sentences of the answer are not backed by the sources.`] : [] };
}

/** critic.report: quality, hallucination risk, issues; a rewrite only for a wrong tool; a person only for real ambiguity. */
export function reportOffline(input: Report): CriticReport {
  const r = input.result;
  if (!r.ok) return verdict(0, 0, [`The step failed: ${r.error?.code ?? "error"}: ${r.error?.message ?? ""}`]);
  const output = (r.output ?? "").trim();
  if (!output) return verdict(0.1, 0, [`The result of ${r.tool} is empty: it does not give ${input.step.expected_outcome || "what the step expected"}.`]);
  const q = classifyQuestion(input.question);
  const flagged = input.perception?.suspicious_patterns ?? [];
  const notes = flagged.length ? [`The result contains suspicious content (${flagged.join(", ")}); it was treated as data.`] : [];
  if (!input.is_final_step && q.kind === "arithmetic" && q.calc.ok && r.tool !== "calculator" && !numbersIn(output).some((n) => sameNumber(n, q.calc.ok ? q.calc.value : ""))) {
    return verdict(0.3, 0.3, [`The question is arithmetic, but ${r.tool} did not give the value of ${q.calc.expression}.`, ...notes], {
      rewrite_suggestion: `Use calculator to evaluate ${q.calc.expression} exactly instead of ${r.tool}.`,
    });
  }
  if (r.tool === "calculator") {
    if (!isNumeric(output)) return verdict(0.2, 0.2, [`The calculator output is not a number: ${clipText(output, 120)}`, ...notes]);
    if (q.kind === "arithmetic" && q.calc.ok && q.calc.exact && !sameNumber(output.replace(/,/g, ""), q.calc.value)) {
      return verdict(0.3, 0.8, [`The calculator returned ${clipText(output, 80)}, but ${q.calc.expression} evaluates to ${q.calc.value}.`, ...notes]);
    }
  }
  if (input.is_final_step) {
    const { risk, issues } = answerRisk(input, output);
    return verdict(risk > 0.5 ? 0.4 : 0.85, risk + (flagged.length ? 0.1 : 0), [...issues, ...notes]);
  }
  const terms = contentWords(input.question);
  const relevant = r.tool === "calculator" || terms.length === 0 || coverage(terms, contentWords(output)) > 0;
  if (!relevant) return verdict(0.4, 0.2, [`The result of ${r.tool} shares nothing with the question.`, ...notes]);
  const ambiguity = ambiguityOf(input.question);
  const report = verdict(0.8, 0.1 + (flagged.length ? 0.1 : 0), notes);
  return ambiguity ? { ...report, requires_human_input: true, question_for_human: ambiguity, issues: [...report.issues, `The question is ambiguous: ${ambiguity}`] } : report;
}
