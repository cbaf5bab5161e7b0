import { defineAgent, type OfflineContext } from "@agentmesh/agent-kit";
import { LIMITS, type OpRequest, type OpResponse } from "@agentmesh/contracts";
import { classifyQuestion, clip, plural, quote, type QuestionKind } from "@agentmesh/offline-kit";
import { CALC_PRECISION } from "@agentmesh/tools";

const FUNCTIONS_HELP = "numbers, + - * / ^ % mod, parentheses, pi, e and sqrt, cbrt, abs, exp, ln, log, log10, log2, floor, ceil, round, sin, cos, tan, asin, acos, atan";

/** The answer and reasoning the engine gives for a question, shared by expert and critic. */
function answerFor(q: QuestionKind, hint: string): { answer: string; reasoning: string } {
  switch (q.kind) {
    case "arithmetic": {
      const c = q.calc;
      if (!c.ok) {
        return {
          answer: `I could not compute ${c.expression}: ${c.reason}.`,
          reasoning: `Recognised the arithmetic expression ${c.expression} but did not evaluate it: ${c.reason}. The offline calculator supports ${FUNCTIONS_HELP}.`,
        };
      }
      const method = `Evaluated the normalised expression ${c.expression} with exact decimal arithmetic (mathjs BigNumber, ${CALC_PRECISION} significant digits).`;
      return c.exact
        ? { answer: `${c.expression} = ${c.value}`, reasoning: `${method} Exact value: ${c.value}.` }
        : {
            answer: `${c.expression} ≈ ${c.value}`,
            reasoning: `${method} The value does not terminate within ${CALC_PRECISION} significant digits, so it is shown rounded to that precision: ${c.value}.`,
          };
    }
    case "greeting":
      return {
        answer: `Hello! I'm agentmesh, running without a language model. I can compute arithmetic exactly — try "What is 12.5 * (3 + 4)?". Other questions need a language model. ${hint}`,
        reasoning: "The query is a greeting, so the reply greets back and explains what can be answered offline.",
      };
    case "vague":
      return {
        answer:
          'Your question is too vague for me to answer. Please ask one specific question — for example "What is 2^64?", or, with a language model configured, a question about a named topic.',
        reasoning: "The query names no specific topic or task, so instead of guessing the reply asks for a specific question.",
      };
    case "needs_model":
      return {
        answer: `I can't answer this question offline: it needs a language model, and I won't guess. ${hint}`,
        reasoning: "The question is not arithmetic, a greeting or a vague query, which are the only kinds the offline engine answers; answering it needs a language model, so no answer was invented.",
      };
  }
}

/** Offline: exact arithmetic, greetings, vague queries; otherwise an honest "needs a model". */
function answerOffline(input: OpRequest<"expert", "answer">, ctx: OfflineContext): OpResponse<"expert", "answer"> {
  const hint = ctx.configHint;
  const q = classifyQuestion(input.question);
  const { answer: text, reasoning } = answerFor(q, hint);
  const notes: string[] = [];
  if (q.kind !== "arithmetic" && input.research_results.length > 0) {
    notes.push(`${plural(input.research_results.length, "research result")} were available, but combining them into an answer needs a language model.`);
  }
  if (input.feedback) notes.push(`Critic feedback considered: ${quote(input.feedback)}.`);
  return { expert_answer: clip(text, LIMITS.maxTextChars), expert_reasoning: clip([reasoning, ...notes].join(" "), LIMITS.maxTextChars) };
}

/** The expert: answers the question from the plan's expert steps and all research results (seed 004). */
export default defineAgent({
  role: "expert",
  description: "Answers the question using every research result and the expert steps",
  ops: {
    answer: {
      contract: "expert.answer",
      render: (i) =>
        [
          `Question: ${i.question}`,
          `Instruction: ${i.message.content}`,
          i.research_results.length ? `Research results:\n${i.research_results.map((r, n) => `${n + 1}. ${i.research_steps[n] ?? "research"}: ${r}`).join("\n")}` : "No research results.",
          i.feedback ? `Critic feedback: ${i.feedback}` : "",
        ].filter(Boolean).join("\n\n"),
      summarize: (o) => o.expert_answer.slice(0, 120),
      offline: answerOffline,
    },
  },
});
