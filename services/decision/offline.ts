import {
  AgentmeshError,
  SUMMARIZE_TOOL,
  type OpRequest,
  type OpResponse,
  type PlanStep,
  type ToolArg,
  type ToolInfo,
} from "@agentmesh/contracts";
import { classifyQuestion, clipText, keywordQuery } from "@agentmesh/offline-kit";

// The decision agent's offline behaviour: arithmetic → calculator, lookups → corpus_search.

type PlanRequest = OpRequest<"decision", "plan">;
type Plan = OpResponse<"decision", "plan">;

const SUMMARIZE_STEP: PlanStep = {
  description: "Write the answer from the results, citing the sources used",
  tool: SUMMARIZE_TOOL,
  args: [],
  expected_outcome: "the final answer",
};

type Usable = (name: string) => ToolInfo | null;

function firstQuoted(text: string): string | null {
  const m = /"([^"\n]{1,400})"|“([^”\n]{1,400})”|(?:^|[\s(])'([^'\n]{1,400})'(?=[\s).,!?;:]|$)/.exec(text);
  return m ? (m[1] ?? m[2] ?? m[3] ?? null) : null;
}

/**
 * Arguments for a tool from the question and the tool's input schema: an `expression` is the
 * question's arithmetic, a `query` its keywords, other text the first quoted string (or the
 * question), a number the first number. Null when a required argument cannot be found.
 */
export function argsFor(tool: ToolInfo, question: string): ToolArg[] | null {
  const schema = tool.input_schema as {
    properties?: Record<string, { type?: unknown; maxLength?: unknown }>;
    required?: unknown;
  };
  const required = Array.isArray(schema.required)
    ? (schema.required as unknown[]).filter((r): r is string => typeof r === "string")
    : [];
  const args: ToolArg[] = [];
  for (const name of required) {
    const prop = schema.properties?.[name] ?? {};
    const max = typeof prop.maxLength === "number" ? Math.min(prop.maxLength, 2000) : 400;
    if (name === "expression") {
      const q = classifyQuestion(question);
      if (q.kind !== "arithmetic") return null;
      args.push({ name, value: q.calc.ok ? q.calc.expression : q.source });
    } else if (prop.type === "string") {
      const value = name === "query" ? keywordQuery(question, max) : (firstQuoted(question) ?? question).slice(0, max);
      args.push({ name, value });
    } else if (prop.type === "number" || prop.type === "integer") {
      const n = /-?\d+(?:\.\d+)?/.exec(question);
      if (!n) return null;
      args.push({ name, value: Number(n[0]) });
    } else {
      return null;
    }
  }
  return args;
}

function toolStep(tool: ToolInfo, question: string, why: string): PlanStep | null {
  const args = argsFor(tool, question);
  if (!args) return null;
  const shown = args.map((a) => `${a.name}=${JSON.stringify(a.value)}`).join(", ");
  const expected: Record<string, string> = {
    calculator: "the exact numeric value",
    corpus_search: "passages that answer the question, with their document paths",
    web_search: "web results that answer the question, with their URLs",
  };
  return {
    description: clipText(`${why}: ${tool.name}(${shown})`, 300),
    tool: tool.name,
    args,
    expected_outcome: expected[tool.name] ?? `the output of ${tool.name}`,
  };
}

/** Fits a plan into `max` steps, keeping the summarize step last. */
function fit(steps: PlanStep[], max: number): PlanStep[] {
  const body = steps.filter((s) => s.tool !== SUMMARIZE_TOOL).slice(0, Math.max(0, max - 1));
  return [...body, SUMMARIZE_STEP];
}

const needsModel = (what: string) =>
  new AgentmeshError(
    "needs_model",
    `${what}; the offline engine plans only arithmetic (calculator), lookups over the corpus (corpus_search), greetings and questions that name a tool.`,
  );

/** A tool the question names by its registry name (e.g. "use test_flaky to ..."). */
function namedTool(question: string, tools: readonly ToolInfo[], usable: Usable): ToolInfo | null {
  for (const t of tools) if (new RegExp(`\\b${t.name}\\b`, "i").test(question) && usable(t.name)) return usable(t.name);
  return null;
}

function initialPlan(input: PlanRequest, usable: Usable): Plan {
  const { question } = input;
  const intent = input.perception.intent;
  const named = namedTool(question, input.tools, usable);
  if (named) {
    const step = toolStep(named, question, `Run the tool the question names`);
    if (step)
      return {
        steps: fit([step], input.max_steps),
        rationale: `The question names the tool ${named.name}: run it, then summarize.`,
      };
  }
  if (intent === "conversation")
    return { steps: [SUMMARIZE_STEP], rationale: "A greeting needs no tool: reply directly." };
  if (intent === "arithmetic") {
    const calc = usable("calculator");
    const step = calc ? toolStep(calc, question, "Evaluate the expression exactly") : null;
    if (step)
      return {
        steps: fit([step], input.max_steps),
        rationale: "Arithmetic: evaluate it exactly with the calculator, then state the value.",
      };
    throw needsModel(
      calc
        ? "The question is arithmetic but no expression was found in it"
        : "The question is arithmetic but the calculator is unavailable or banned",
    );
  }
  if (intent === "lookup" || intent === "explanation" || intent === "comparison") {
    for (const name of ["corpus_search", "web_search"]) {
      const tool = usable(name);
      const step = tool
        ? toolStep(tool, question, name === "corpus_search" ? "Search the document corpus" : "Search the web")
        : null;
      if (step)
        return {
          steps: fit([step], input.max_steps),
          rationale: `A ${intent} question: search with ${name}, then answer from the passages with citations.`,
        };
    }
    throw needsModel("No search tool is available (corpus_search and web_search are missing or banned)");
  }
  throw needsModel(`Planning for a question of intent "${intent}" needs a language model`);
}

/**
 * A rewrite: follow a suggestion that names a tool to use instead ("Use calculator …"); re-run
 * with a person's answer folded into the search; otherwise a language model is needed.
 */
function rewritePlan(input: PlanRequest, usable: Usable): Plan {
  const previous = input.previous_plan;
  const failedAt = input.failed_step_index ?? 0;
  const suggestion = input.rewrite_suggestion ?? "";
  const failed = previous?.steps[failedAt];
  if (!previous || !failed) throw needsModel("A rewrite without the previous plan");
  const rest = previous.steps.slice(failedAt + 1).filter((s) => s.tool === SUMMARIZE_TOOL || usable(s.tool));
  for (const m of suggestion.matchAll(/\b(?:use|try|switch to|call)\s+(?:the\s+)?([a-z][a-z0-9_]*)/gi)) {
    const tool = usable((m[1] ?? "").toLowerCase());
    if (!tool || tool.name === failed.tool || tool.name === SUMMARIZE_TOOL) continue;
    const step = toolStep(tool, input.question, `Rewrite: ${tool.name} instead of ${failed.tool}`);
    if (step)
      return {
        steps: fit([step, ...rest], input.max_steps),
        rationale: clipText(`Followed the suggestion: ${suggestion}`, 1000),
      };
  }
  const reply = /answered:\s*([\s\S]+)$/.exec(suggestion)?.[1]?.trim();
  if (reply && failed.tool !== SUMMARIZE_TOOL && usable(failed.tool)) {
    const tool = usable(failed.tool) as ToolInfo;
    const step = toolStep(tool, `${input.question} ${reply}`, `Again with the person's answer`);
    if (step)
      return {
        steps: fit([step, ...rest], input.max_steps),
        rationale: clipText(`Re-ran ${failed.tool} with the person's answer: ${reply}`, 1000),
      };
  }
  throw needsModel(
    `Rewriting the plan after "${clipText(suggestion, 300)}" needs a language model (the suggestion names no tool to use instead)`,
  );
}

/** decision.plan: arithmetic → calculator; lookup → corpus_search; never a banned tool; within max_steps. */
export function decideOffline(input: PlanRequest): Plan {
  const banned = new Set(input.memory.banned_tools.map((b) => b.tool));
  const usable: Usable = (name) => (banned.has(name) ? null : (input.tools.find((t) => t.name === name) ?? null));
  return input.previous_plan ? rewritePlan(input, usable) : initialPlan(input, usable);
}
