import type { OfflineContext } from "@agentmesh/agent-kit";
import { LIMITS, type OpRequest, type OpResponse, type ToolObservation } from "@agentmesh/contracts";
import {
  classifyQuestion,
  clip,
  plural,
  quote,
  renderObservations,
  renderTools,
  type QuestionKind,
} from "@agentmesh/offline-kit";
import { CALC_PRECISION } from "@agentmesh/tools";

/**
 * critic-chain's expert (it computes with its tools): what its model
 * is told each turn, and its offline behaviour, which computes through the calculator tool (an
 * executor.call the workflow runs), never by itself.
 */

type Request = OpRequest<"expert", "answer">;
type Turn = OpResponse<"expert", "answer">;

const FUNCTIONS_HELP =
  "numbers, + - * / ^ % mod, parentheses, pi, e and sqrt, cbrt, abs, exp, ln, log, log10, log2, floor, ceil, round, sin, cos, tan, asin, acos, atan";
/** The most characters of a rejected answer (and of its reasoning) shown back to the model. */
const REJECTED_SHOWN = 6000;

/** What the turn may do next: call one of its tools while rounds are left, else answer now. */
function nextMove(input: Request): string {
  if (input.tools.length === 0) return "No tools are available to you: answer with action answer.";
  if (input.tool_rounds_left === 0)
    return "No tool rounds are left in this turn: answer now with action answer, from what you have.";
  return `Tool rounds left in this turn: ${input.tool_rounds_left}. To call a tool, answer with action tool, its name in tool and its arguments as a JSON object in arguments_json; to finish, action answer with expert_answer and expert_reasoning. Compute with a tool rather than in your head.\n\nTools you may call:\n${renderTools(input.tools)}`;
}

/** The expert's user prompt: the question, the instruction, the research, what the critic rejected and why, its tools and what they returned. */
export function renderAnswer(input: Request): string {
  const rejected = input.rejected_answer;
  return [
    `Question: ${input.question}`,
    `Instruction: ${input.message.content}`,
    input.research_results.length
      ? `Research results:\n${input.research_results.map((r, n) => `${n + 1}. ${input.research_steps[n] ?? "research"}: ${r}`).join("\n")}`
      : "No research results.",
    rejected
      ? `Your earlier answer, which the critic rejected:\n${clip(rejected.expert_answer, REJECTED_SHOWN)}\n\nIts reasoning:\n${clip(rejected.expert_reasoning, REJECTED_SHOWN)}`
      : "",
    input.feedback ? `Critic feedback: ${input.feedback}` : "",
    renderObservations(input.observations),
    nextMove(input),
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** One line for the log. */
export const summarizeAnswer = (o: Turn): string =>
  o.action === "tool" ? `calls ${o.tool}` : o.expert_answer.slice(0, 120);

const answer = (text: string, reasoning: string): Turn => ({
  action: "answer",
  expert_answer: clip(text, LIMITS.maxTextChars),
  expert_reasoning: clip(reasoning, LIMITS.maxTextChars),
  tool: "",
  arguments_json: "",
});

/** Significant digits of a decimal or scientific numeral ("0.0250" has 3, "1.5e+70" has 2). */
function significantDigits(value: string): number {
  const mantissa = value.replace(/^[-+]/, "").split(/e/i)[0] ?? "";
  return mantissa.replace(".", "").replace(/^0+/, "").length;
}

/** The calculator's answer for `expression`, as the executor reported it: its value, or why it could not compute. */
function fromCalculator(expression: string, o: ToolObservation): { answer: string; reasoning: string } {
  const method = `Evaluated the normalised expression ${expression} with the calculator tool (exact decimal arithmetic, ${CALC_PRECISION} significant digits).`;
  if (!o.ok) {
    const reason = o.content.replace(/^[a-z_]+: (?:cannot evaluate: )?/, "").trim();
    return {
      answer: `I could not compute ${expression}: ${reason}.`,
      reasoning: `Asked the calculator tool for ${expression}; it did not evaluate it: ${reason}. The calculator supports ${FUNCTIONS_HELP}.`,
    };
  }
  const value = o.content.trim();
  // A value that fills every digit the calculator carries may have been rounded to them.
  return significantDigits(value) < CALC_PRECISION
    ? { answer: `${expression} = ${value}`, reasoning: `${method} Exact value: ${value}.` }
    : {
        answer: `${expression} ≈ ${value}`,
        reasoning: `${method} The value fills all ${CALC_PRECISION} significant digits, so it may be rounded to that precision: ${value}.`,
      };
}

/** The answer and reasoning for a question that is not arithmetic. */
function otherAnswer(
  q: Exclude<QuestionKind, { kind: "arithmetic" }>,
  hint: string,
): { answer: string; reasoning: string } {
  switch (q.kind) {
    case "greeting":
      return {
        answer: `Hello! I'm agentmesh, running without a language model. I can compute arithmetic exactly — try "What is 12.5 * (3 + 4)?". Other questions need a language model. ${hint}`,
        reasoning: "The query is a greeting, so the reply greets back and explains what can be answered offline.",
      };
    case "vague":
      return {
        answer:
          'Your question is too vague for me to answer. Please ask one specific question — for example "What is 2^64?", or, with a language model configured, a question about a named topic.',
        reasoning:
          "The query names no specific topic or task, so instead of guessing the reply asks for a specific question.",
      };
    case "needs_model":
      return {
        answer: `I can't answer this question offline: it needs a language model, and I won't guess. ${hint}`,
        reasoning:
          "The question is not arithmetic, a greeting or a vague query, which are the only kinds the offline engine answers; answering it needs a language model, so no answer was invented.",
      };
  }
}

/**
 * Offline: arithmetic goes to the calculator tool (one round), and the answer states what it
 * returned; greetings and vague queries are answered; anything else honestly needs a model.
 */
export function answerOffline(input: Request, ctx: Pick<OfflineContext, "configHint">): Turn {
  const q = classifyQuestion(input.question);
  const notes: string[] = [];
  let said: { answer: string; reasoning: string };
  if (q.kind === "arithmetic") {
    const { expression } = q.calc;
    const computed = input.observations
      .filter((o) => o.tool === "calculator" && o.arguments.expression === expression)
      .at(-1);
    if (!computed && input.tools.some((t) => t.name === "calculator") && input.tool_rounds_left > 0) {
      return {
        action: "tool",
        tool: "calculator",
        arguments_json: JSON.stringify({ expression }),
        expert_answer: "",
        expert_reasoning: "",
      };
    }
    said = computed
      ? fromCalculator(expression, computed)
      : {
          answer: `I could not compute ${expression}: the calculator tool is not available to me here.`,
          reasoning: `Recognised the arithmetic expression ${expression}, but computes only with the calculator tool, which was not offered (or no tool round was left), so no value is given. ${ctx.configHint}`,
        };
  } else {
    said = otherAnswer(q, ctx.configHint);
    if (input.research_results.length > 0)
      notes.push(
        `${plural(input.research_results.length, "research result")} were available, but combining them into an answer needs a language model.`,
      );
  }
  if (input.feedback) notes.push(`Critic feedback considered: ${quote(input.feedback)}.`);
  return answer(said.answer, [said.reasoning, ...notes].join(" "));
}
