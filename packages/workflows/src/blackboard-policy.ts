import {
  LIMITS,
  type BlackboardData,
  type Citation,
  type CriticReport,
  type NextAction,
  type StepResult,
} from "@agentmesh/contracts";
import { CAPS, currentStep, latestRetrieval } from "./blackboard-data.js";
import { MAX_HUMAN_QUESTIONS } from "./blackboard-tasks.js";
import { COULD_NOT_ANSWER, clip } from "./critic-chain-messages.js";

/** How to get past a step that failed or was not acceptable. */
export interface Recovery {
  /** A rewrite is the better remedy (the critic suggested one, or re-running cannot help). */
  readonly preferRewrite: boolean;
  /** Re-running the same step could give another result (a retryable failure, a critic's doubt). */
  readonly retryUseful: boolean;
  /** What the decision agent is told when it rewrites. */
  readonly suggestion: string;
  /** Why, for the final message if nothing is left to try. */
  readonly why: string;
}

/**
 * The rules once a step went wrong: rewrite first when that is the better remedy and rewrites
 * are left; else retry while profile retries are left; else rewrite; else give up with a clear
 * message. Retries count per plan step, rewrites per session.
 */
export function recoverFrom(data: BlackboardData, r: Recovery): NextAction {
  const { max_retries, max_rewrites } = data.limits;
  const rewritesLeft = data.rewrite_count < max_rewrites;
  const retriesLeft = data.step_retries < max_retries;
  const suggestion = clip(r.suggestion, 2000);
  if (r.preferRewrite && rewritesLeft) return { kind: "rewrite", suggestion };
  if (r.retryUseful && retriesLeft) return { kind: "retry", reason: clip(r.why, 2000) };
  if (rewritesLeft) return { kind: "rewrite", suggestion };
  const used = `${data.step_retries} of ${max_retries} retries of this step and ${data.rewrite_count} of ${max_rewrites} plan rewrites used`;
  return { kind: "give_up", reason: clip(`${r.why} (${used}).`, 2000) };
}

const stepName = (data: BlackboardData) => {
  const at = currentStep(data);
  return at ? `Step ${at.index + 1} (${at.step.tool})` : "The step";
};

/**
 * Whether the step is acceptable: the critic's scores decide (quality ≥ the profile's
 * `min_quality`, hallucination risk ≤ its `max_hallucination_risk`); a verdict they contradict is
 * overruled, and `contradiction` says so for the trace.
 */
export function acceptability(
  data: BlackboardData,
  report: CriticReport,
): { acceptable: boolean; contradiction: string | null } {
  const { min_quality, max_hallucination_risk } = data.limits;
  const acceptable = report.quality >= min_quality && report.hallucination_risk <= max_hallucination_risk;
  if (acceptable === report.is_acceptable) return { acceptable, contradiction: null };
  const scores = `quality ${report.quality} (needs ≥ ${min_quality}), hallucination risk ${report.hallucination_risk} (needs ≤ ${max_hallucination_risk})`;
  const contradiction = `the critic said ${report.is_acceptable ? "acceptable" : "not acceptable"} but its scores say ${acceptable ? "acceptable" : "not acceptable"} (${scores}): the scores decide`;
  return { acceptable, contradiction };
}

/** What the critic's report means for the step: go on, ask a person, or recover. */
export function verdictOf(data: BlackboardData, report: CriticReport): NextAction {
  const { acceptable } = acceptability(data, report);
  if (report.requires_human_input && report.question_for_human !== null && data.questions_asked < MAX_HUMAN_QUESTIONS) {
    return {
      kind: "ask_human",
      question: report.question_for_human,
      acceptable,
      rewrite_suggestion: report.rewrite_suggestion,
    };
  }
  if (acceptable) return { kind: "advance" };
  const issues = report.issues.length > 0 ? `: ${report.issues.slice(0, 5).join("; ")}` : "";
  const why = `${stepName(data)} was not acceptable (quality ${report.quality}, hallucination risk ${report.hallucination_risk})${issues}`;
  return recoverFrom(data, {
    preferRewrite: report.rewrite_suggestion !== null,
    retryUseful: true,
    suggestion: report.rewrite_suggestion ?? why,
    why,
  });
}

/** Recovery from a step whose every strategy failed: retry when a failure was transient, else rewrite. */
export function failedStepAction(data: BlackboardData, results: readonly StepResult[]): NextAction {
  const transient = results.some((r) => r.error?.retryable === true);
  const failures = results
    .map((r) => `${r.strategy} ${r.tool}: ${r.error?.code ?? "error"} (${clip(r.error?.message ?? "", 160)})`)
    .join("; ");
  const why = `${stepName(data)} failed: ${failures}`;
  const suggestion = `${why}. ${transient ? "It may work on another try, or" : "Running it again cannot help:"} choose another tool or other arguments.`;
  return recoverFrom(data, { preferRewrite: !transient, retryUseful: transient, suggestion, why });
}

/** The rewrite advice after a person answered the critic's question. */
export function withReply(suggestion: string | null, question: string, reply: string): string {
  return clip(
    `${suggestion ?? "The critic asked a person for input."} The person was asked "${question}" and answered: ${reply}`,
    2000,
  );
}

const sameCitation = (a: Citation, b: Citation) => a.path === b.path && a.passage === b.passage;

/** Sources of the answer: the accepted steps' and the summary's citations, then relevant corpus retrieval. */
export function collectCitations(data: BlackboardData, summary: StepResult): Citation[] {
  const fromSteps = [...data.accepted_results.flatMap((r) => r.citations), ...summary.citations];
  const fromRetrieval = (latestRetrieval(data)?.items ?? []).flatMap((i) =>
    i.source === "corpus" && i.citation && i.relevance >= 0.5 ? [i.citation] : [],
  );
  const out: Citation[] = [];
  for (const c of [...fromSteps, ...fromRetrieval]) if (!out.some((x) => sameCitation(x, c))) out.push(c);
  return out.slice(0, CAPS.citations);
}

/** The reasoning trace: one line per thing that happened on the blackboard. */
export const reasoningTrace = (data: BlackboardData): string => clip(data.trace.join("\n"), LIMITS.maxTextChars);

/** The final answer: the summarize step's output with its numbered sources. */
export function finalAnswer(summary: StepResult, citations: readonly Citation[]): string {
  const body = summary.output ?? "";
  if (citations.length === 0) return clip(body, LIMITS.maxTextChars);
  const sources = citations.map((c, i) => `[${i + 1}] ${c.path}: "${clip(c.passage, 200)}"`).join("\n");
  return clip(`${body}\n\nSources:\n${sources}`, LIMITS.maxTextChars);
}

/** The final message when the limits ran out: clear about what failed. */
export const giveUpAnswer = (reason: string): string => clip(`${COULD_NOT_ANSWER} ${reason}`, LIMITS.maxTextChars);
