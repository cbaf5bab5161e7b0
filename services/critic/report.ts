import type { CriticReport, OpRequest } from "@agentmesh/contracts";
import {
  ambiguityOf,
  classifyQuestion,
  clipText,
  contentWords,
  coverage,
  intentOf,
  numbersIn,
  sentencesOf,
} from "@agentmesh/offline-kit";
import { sameNumber } from "@agentmesh/tools";

// The critic's offline `report` (blackboard): scores by rule, from the same inputs the prompt shows.

type Report = OpRequest<"critic", "report">;

const isNumeric = (text: string): boolean =>
  /^\s*[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[+-]?\d+)?(?:\s+[A-Za-z][\w^/]*)?\s*$/i.test(text) ||
  /^\s*\[[\d\s.,\-+e[\]]+\]\s*$/i.test(text);

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
    return stated
      ? { risk: 0.05, issues: [] }
      : {
          risk: 0.9,
          issues: [`The answer does not state the exact value of ${q.calc.expression}, which is ${q.calc.value}.`],
        };
  }
  if (q.kind === "greeting") return { risk: 0.05, issues: [] };
  const intent = intentOf(input.question);
  if (input.result.citations.length === 0) {
    if (intent === "lookup" || intent === "explanation" || intent === "comparison")
      return { risk: 0.7, issues: ["The answer cites no source for a question that needs one."] };
    return {
      risk: 0.3,
      issues: ["The answer rests on tool outputs that cannot be re-checked against sources offline."],
    };
  }
  const evidence = [
    ...input.result.citations.map((c) => c.passage),
    ...(input.retrieval?.items.map((i) => i.content) ?? []),
    input.retrieval?.summary ?? "",
  ].join(" ");
  const known = new Set(contentWords(evidence));
  const sentences = sentencesOf(answer.replace(/\[\d+\]/g, " "))
    .map((s) => contentWords(s))
    .filter((w) => w.length >= 3);
  if (sentences.length === 0) return { risk: 0.3, issues: [] };
  const backed = sentences.filter((w) => coverage(w, known) >= 0.5).length;
  if (backed === 0)
    return {
      risk: 0.9,
      issues: ["No sentence of the answer is backed by the retrieved passages or the cited sources."],
    };
  const risk = 0.1 + 0.8 * (1 - backed / sentences.length);
  return {
    risk,
    issues:
      backed < sentences.length
        ? [`${sentences.length - backed} of ${sentences.length} sentences of the answer are not backed by the sources.`]
        : [],
  };
}

/** critic.report: quality, hallucination risk, issues; a rewrite only for a wrong tool; a person only for real ambiguity. */
export function reportOffline(input: Report): CriticReport {
  const r = input.result;
  if (!r.ok) return verdict(0, 0, [`The step failed: ${r.error?.code ?? "error"}: ${r.error?.message ?? ""}`]);
  const output = (r.output ?? "").trim();
  if (!output)
    return verdict(0.1, 0, [
      `The result of ${r.tool} is empty: it does not give ${input.step.expected_outcome || "what the step expected"}.`,
    ]);
  const q = classifyQuestion(input.question);
  const flagged = input.perception?.suspicious_patterns ?? [];
  const notes = flagged.length
    ? [`The result contains suspicious content (${flagged.join(", ")}); it was treated as data.`]
    : [];
  if (
    !input.is_final_step &&
    q.kind === "arithmetic" &&
    q.calc.ok &&
    r.tool !== "calculator" &&
    !numbersIn(output).some((n) => sameNumber(n, q.calc.ok ? q.calc.value : ""))
  ) {
    return verdict(
      0.3,
      0.3,
      [`The question is arithmetic, but ${r.tool} did not give the value of ${q.calc.expression}.`, ...notes],
      {
        rewrite_suggestion: `Use calculator to evaluate ${q.calc.expression} exactly instead of ${r.tool}.`,
      },
    );
  }
  if (r.tool === "calculator") {
    if (!isNumeric(output))
      return verdict(0.2, 0.2, [`The calculator output is not a number: ${clipText(output, 120)}`, ...notes]);
    if (q.kind === "arithmetic" && q.calc.ok && q.calc.exact && !sameNumber(output.replace(/,/g, ""), q.calc.value)) {
      return verdict(0.3, 0.8, [
        `The calculator returned ${clipText(output, 80)}, but ${q.calc.expression} evaluates to ${q.calc.value}.`,
        ...notes,
      ]);
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
  return ambiguity
    ? {
        ...report,
        requires_human_input: true,
        question_for_human: ambiguity,
        issues: [...report.issues, `The question is ambiguous: ${ambiguity}`],
      }
    : report;
}
