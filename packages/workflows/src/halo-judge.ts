import { Capability, type DomainHints, type SpecialistOutput } from "@agentmesh/contracts";
import { DEFAULT_DOMAIN_HINTS } from "./halo-domain-hints.js";
import { sourceCount } from "./halo-outputs.js";

/** Cited sources count towards a score up to this many; a source cited twice counts once. */
const MAX_CITATION_POINTS = 3;
/** An answer longer than this many characters earns a point. */
const LONG_ANSWER_CHARS = 120;

/** One specialist's output with its score. */
export interface JudgedOutput {
  readonly output: SpecialistOutput;
  readonly score: number;
}

/** The judge's verdict: outputs best first, the primary one, and the summary kept as `judge_response`. */
export interface Judgement {
  /** Best score first; ties keep plan order; unavailable specialists last. */
  readonly ranked: readonly JudgedOutput[];
  /** The best answered output; null when no specialist answered. */
  readonly primary: SpecialistOutput | null;
  /** One line per specialist, in rank order: capability, score, sources cited, answer length. */
  readonly judge_response: string;
}

/** Lowercase words, space-separated and space-padded, so a phrase matches only whole words. */
const padded = (text: string): string => ` ${(text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).join(" ")} `;

/** The bonus the question earns a capability: its row's bonus when the question has one of its keywords. */
export function domainBonus(question: string, capability: Capability, hints: DomainHints): number {
  const row = hints[capability];
  if (!row) return 0;
  const text = padded(question);
  return row.keywords.some((k) => text.includes(padded(k))) ? row.bonus : 0;
}

/**
 * A specialist's score: min(3, distinct sources cited) + 1 when its answer is longer than 120 characters +
 * its domain bonus for the question. An unavailable specialist scores 0 whatever the question.
 */
export function scoreOutput(
  output: SpecialistOutput,
  question: string,
  hints: DomainHints = DEFAULT_DOMAIN_HINTS,
): number {
  if (output.status === "unavailable") return 0;
  const citations = Math.min(MAX_CITATION_POINTS, sourceCount(output));
  const length = output.response_str.length > LONG_ANSWER_CHARS ? 1 : 0;
  return citations + length + domainBonus(question, output.capability, hints);
}

const summaryLine = ({ output, score }: JudgedOutput, primary: boolean): string => {
  const note = primary
    ? " (primary)"
    : output.status === "unavailable"
      ? ` (unavailable: ${output.error_code ?? "no answer"})`
      : "";
  return `${output.capability}: score ${score}, citations ${sourceCount(output)}, length ${output.response_str.length}${note}`;
};

/**
 * Judges the specialists' outputs (a light critique in code): scores them, ranks them
 * (ties go to the capability earlier in `plan`; unavailable ones come last, so one is never
 * primary) and writes the summary. Pure: the same outputs give the same verdict whatever order they arrived in.
 */
export function judge(
  outputs: readonly SpecialistOutput[],
  plan: readonly Capability[],
  question: string,
  hints: DomainHints = DEFAULT_DOMAIN_HINTS,
): Judgement {
  // A capability outside the plan (not expected) goes after it, in the capability tags' order.
  const rank = (c: Capability) => {
    const at = plan.indexOf(c);
    return at < 0 ? plan.length + Capability.options.indexOf(c) : at;
  };
  const answered = (o: SpecialistOutput) => (o.status === "answered" ? 0 : 1);
  const ranked = outputs
    .map((output) => ({ output, score: scoreOutput(output, question, hints) }))
    .sort(
      (a, b) =>
        answered(a.output) - answered(b.output) ||
        b.score - a.score ||
        rank(a.output.capability) - rank(b.output.capability),
    );
  const first = ranked[0];
  const primary = first && first.output.status === "answered" ? first.output : null;
  const judge_response = ranked.map((j) => summaryLine(j, j.output === primary)).join("\n");
  return { ranked, primary, judge_response };
}
