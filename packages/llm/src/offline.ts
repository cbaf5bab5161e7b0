import { findOp, LIMITS, type OpRequest, type OpResponse } from "@agentmesh/contracts";
import { CALC_PRECISION, sameNumber } from "./calc.js";
import { classifyQuestion, type QuestionKind } from "./classify.js";
import { AgentmeshError } from "@agentmesh/contracts";
import { decide, perceive } from "./offline-blackboard.js";
import { reportOffline, summarizeOffline } from "./offline-answer.js";
import type { ModelPort, ModelReply, ModelRequest } from "./types.js";

/** Options for the offline engine. */
export interface OfflineModelOptions {
  /**
   * How to configure a real model, quoted when a question needs one. The default names the
   * service env vars; a deployment with other settings passes its own sentence.
   */
  readonly configHint?: string;
}

/** The default configuration hint quoted in "needs a language model" answers. */
export const DEFAULT_CONFIG_HINT =
  "To use a language model, set AGENTMESH_LLM_BASE_URL to an OpenAI-compatible endpoint " +
  "(for example http://localhost:11434/v1 for Ollama), and AGENTMESH_LLM_API_KEY if it needs a key, then restart agentmesh.";

const NOT_ANSWERED = "The question could not be answered.";
const FUNCTIONS_HELP = "numbers, + - * / ^ % mod, parentheses, pi, e and sqrt, cbrt, abs, exp, ln, log, log10, log2, floor, ceil, round, sin, cos, tan, asin, acos, atan";

const clip = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);
const quote = (s: string) => `"${clip(s.trim().replace(/\s+/g, " "), 200)}"`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

type Verdict = OpResponse<"critic", "review_plan">;
const approve = (feedback: string): Verdict => ({ decision: "approve", feedback: clip(feedback, 4000) });
const reject = (feedback: string): Verdict => ({ decision: "reject", feedback: clip(feedback, 4000) });

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

function plan(input: OpRequest<"planner", "plan">): OpResponse<"planner", "plan"> {
  const q = classifyQuestion(input.question);
  const step = (() => {
    switch (q.kind) {
      case "arithmetic":
        return q.calc.ok
          ? `Evaluate the expression ${q.calc.expression} exactly with arbitrary-precision decimal arithmetic and state the exact value.`
          : `Explain why the expression ${q.calc.expression} cannot be evaluated: ${q.calc.reason}.`;
      case "greeting":
        return "Reply to the greeting and explain what can be answered without a language model.";
      case "vague":
        return "Ask the user to restate the query as one specific question; it is too vague to answer.";
      case "needs_model":
        return "Explain that answering this question needs a language model and how to configure one; do not guess an answer.";
    }
  })();
  return { research_steps: [], expert_steps: [clip(step, 2000)] };
}

function reviewPlan(input: OpRequest<"critic", "review_plan">): Verdict {
  const question = quote(input.question);
  if (input.expert_steps.length === 0) return reject(`The plan has no expert steps. Add at least one concrete expert step that answers ${question}.`);
  const steps = [...input.research_steps, ...input.expert_steps];
  const blank = steps.findIndex((s) => s.trim().length === 0);
  if (blank >= 0) return reject(`Step ${blank + 1} of the plan is blank. Replace it with a concrete action, or remove it.`);
  const seen = new Set<string>();
  for (const s of steps) {
    const key = s.trim().toLowerCase();
    if (seen.has(key)) return reject(`The plan repeats the step ${quote(s)}. Remove the duplicate so that each step does distinct work.`);
    seen.add(key);
  }
  return approve(`The plan is well-formed: ${plural(input.research_steps.length, "research step")} and ${plural(input.expert_steps.length, "expert step")} for ${question}.`);
}

function reviewResearch(input: OpRequest<"critic", "review_research">): Verdict {
  if (input.research_result.trim().length === 0) {
    return reject(`The research result for the step ${quote(input.research_step)} is empty. Carry out the step and report what was found, or say plainly that nothing was found.`);
  }
  return approve(`The research result reports on the step ${quote(input.research_step)}.`);
}

/** Numbers written in a text, thousands separators removed ("18,446,744" → 18446744). */
function numbersIn(text: string): string[] {
  return text.replace(/(\d),(?=\d{3}(?!\d))/g, "$1").match(/-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi) ?? [];
}

function reviewAnswer(input: OpRequest<"critic", "review_answer">): Verdict {
  if (input.expert_answer.trim().length === 0) return reject(`The expert answer is empty. Answer the question ${quote(input.question)} directly.`);
  if (input.expert_reasoning.trim().length === 0) return reject("The answer gives no reasoning. Explain how it was reached (the steps, the sources or the computation).");
  const q = classifyQuestion(input.question);
  // Only an exact value can be checked offline; a rounded one may be legitimately written shorter.
  if (q.kind === "arithmetic" && q.calc.ok && q.calc.exact) {
    const { expression, value } = q.calc;
    if (!numbersIn(input.expert_answer).some((n) => sameNumber(n, value))) {
      return reject(`The answer does not state the exact value of ${expression}, which is ${value}. Recompute it with exact decimal arithmetic and state that value.`);
    }
  }
  return approve("The answer addresses the question and explains how it was reached.");
}

function research(input: OpRequest<"researcher", "research">, hint: string): OpResponse<"researcher", "research"> {
  return {
    result: clip(`No research source is available offline, so the step ${quote(input.research_step)} was not researched and nothing is reported as found. ${hint}`, LIMITS.maxTextChars),
  };
}

function answer(input: OpRequest<"expert", "answer">, hint: string): OpResponse<"expert", "answer"> {
  const q = classifyQuestion(input.question);
  const { answer: text, reasoning } = answerFor(q, hint);
  const notes: string[] = [];
  if (q.kind !== "arithmetic" && input.research_results.length > 0) {
    notes.push(`${plural(input.research_results.length, "research result")} were available, but combining them into an answer needs a language model.`);
  }
  if (input.feedback) notes.push(`Critic feedback considered: ${quote(input.feedback)}.`);
  return { expert_answer: clip(text, LIMITS.maxTextChars), expert_reasoning: clip([reasoning, ...notes].join(" "), LIMITS.maxTextChars) };
}

function finalize(input: OpRequest<"finalizer", "finalize">): OpResponse<"finalizer", "finalize"> {
  if (input.error !== null) {
    const component = input.error_component ?? "workflow";
    return {
      final_answer: clip(`${NOT_ANSWERED} The ${component} step failed: ${input.error}`, LIMITS.maxTextChars),
      final_reasoning_trace: clip(`The run stopped because the ${component} step failed (${input.error}). No answer was produced, so none is given.`, LIMITS.maxTextChars),
    };
  }
  const finalAnswer = input.expert_answer.trim() || NOT_ANSWERED;
  const research =
    input.research_results.length === 0 ? "No research was needed." : `${plural(input.research_results.length, "research result")} were gathered.`;
  const trace = [
    `1. The planner planned how to answer ${quote(input.question)}.`,
    `2. ${research}`,
    `3. The expert answered: ${input.expert_reasoning.trim() || "(no reasoning given)"}`,
    "4. The final answer is the expert's answer.",
  ].join("\n");
  return { final_answer: clip(finalAnswer, LIMITS.maxTextChars), final_reasoning_trace: clip(trace, LIMITS.maxTextChars) };
}

type Handler = (input: never, hint: string) => unknown;
const HANDLERS: Record<string, Record<string, Handler>> = {
  planner: { plan },
  critic: { review_plan: reviewPlan, review_research: reviewResearch, review_answer: reviewAnswer, report: reportOffline },
  researcher: { research },
  expert: { answer },
  finalizer: { finalize },
  // blackboard: memory.update, retriever.retrieve and executor.list_tools are handlers (no model)
  perception: { perceive },
  decision: { plan: decide },
  // the executor asks the model only for its summarize step
  executor: { execute: summarizeOffline },
};

/**
 * The offline engine: the default model when no endpoint is configured. It answers the
 * critic-chain and blackboard ops heuristically and deterministically (no clock, no randomness):
 * exact arithmetic, greetings, vague-query detection, corpus answers quoted with citations, and
 * an honest "needs a language model" otherwise.
 */
export function createOfflineModel(opts: OfflineModelOptions = {}): ModelPort {
  const hint = opts.configHint ?? DEFAULT_CONFIG_HINT;
  return {
    name: "offline",
    complete<T>(req: ModelRequest<T>): Promise<ModelReply<T>> {
      // Async work only in the sense of the port's shape; settle through a promise either way.
      return Promise.resolve().then(() => completeOffline(req, hint));
    },
  };
}

function completeOffline<T>(req: ModelRequest<T>, hint: string): ModelReply<T> {
  if (req.signal?.aborted) throw new AgentmeshError("cancelled", "the model call was cancelled before it started");
  const handler = Object.hasOwn(HANDLERS, req.role) && Object.hasOwn(HANDLERS[req.role]!, req.op) ? HANDLERS[req.role]![req.op] : undefined;
  const def = findOp(req.role, req.op);
  if (!handler || !def) throw new AgentmeshError("needs_model", `the offline engine cannot answer ${req.role}.${req.op}; a language model is needed. ${hint}`);
  const input = def.request.safeParse(req.input);
  if (!input.success) throw new AgentmeshError("internal", `offline engine: the input for ${req.role}.${req.op} failed its schema: ${input.error.message}`);
  const raw = handler(input.data as never, hint);
  const output = req.schema.safeParse(raw);
  if (!output.success) throw new AgentmeshError("internal", `offline engine: its ${req.role}.${req.op} output failed the requested schema: ${output.error.message}`);
  return {
    output: output.data,
    usage: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 },
    model: "offline",
    tier: "fast",
    latencyMs: 0,
  };
}
