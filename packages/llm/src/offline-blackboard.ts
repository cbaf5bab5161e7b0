import {
  BLACKBOARD_LIMITS,
  SUMMARIZE_TOOL,
  type Intent,
  type OpRequest,
  type OpResponse,
  type PerceptionSnapshot,
  type PlanStep,
  type ToolArg,
  type ToolInfo,
} from "@agentmesh/contracts";
import { classifyQuestion } from "./classify.js";
import { clipText, constraintsOf, entitiesOf, intentOf, keywordQuery, suspiciousPatterns } from "./blackboard-text.js";
import { AgentmeshError } from "@agentmesh/contracts";

// The offline engine's perception and decision heuristics for the blackboard workflow.

type Perceive = OpRequest<"perception", "perceive">;
type PlanRequest = OpRequest<"decision", "plan">;
type Plan = OpResponse<"decision", "plan">;

const CONFIDENCE: Record<Intent, number> = { arithmetic: 0.95, conversation: 0.9, lookup: 0.7, explanation: 0.7, comparison: 0.6, code: 0.5, other: 0.4 };
const RULE: Record<Intent, string> = {
  arithmetic: "the question is an arithmetic expression",
  conversation: "the question is a greeting",
  lookup: "the question asks what, who, where, which or when",
  explanation: "the question asks why or how, or asks to explain",
  comparison: "the question asks to compare",
  code: "the question asks for code",
  other: "no rule matched",
};

function subGoals(question: string, intent: Intent): string[] {
  const q = classifyQuestion(question);
  switch (intent) {
    case "arithmetic":
      return q.kind === "arithmetic" && q.calc.ok ? [`Evaluate ${q.calc.expression} exactly`, "State the exact value"] : ["Find the expression to evaluate", "State its value"];
    case "conversation":
      return ["Reply to the greeting"];
    case "lookup":
    case "explanation":
    case "comparison": {
      const parts = question
        .split(/\?|;|\band\s+(?=(?:what|who|where|why|how|when|which)\b)/i)
        .map((p) => p.trim())
        .filter((p) => p.length >= 3);
      return [...parts.map((p) => clipText(`Find: ${p}`, 200)), "Answer with citations from the sources"].slice(0, BLACKBOARD_LIMITS.maxSubGoals);
    }
    case "code":
    case "other":
      return ["Work out what is asked", "Answer plainly"];
  }
}

/** perception.perceive: entities, intent, constraints and sub-goals by rule; suspicious patterns flagged, never acted on. */
export function perceive(input: Perceive): PerceptionSnapshot {
  const intent = intentOf(input.query);
  if (input.kind === "query") {
    const flagged = suspiciousPatterns(input.query);
    const entities = entitiesOf(input.query);
    const notes = [
      `Offline rules: intent ${intent} (${RULE[intent]}); ${entities.length} entities.`,
      flagged.length ? `Suspicious patterns flagged, not acted on: ${flagged.join(", ")}.` : "",
    ].filter(Boolean).join(" ");
    return {
      entities,
      intent,
      constraints: constraintsOf(input.query),
      sub_goals: subGoals(input.query, intent),
      confidence: Math.round(Math.max(0.1, CONFIDENCE[intent] - (flagged.length ? 0.2 : 0)) * 100) / 100,
      suspicious_patterns: flagged,
      goal_satisfied: null,
      notes: clipText(notes, 1000),
    };
  }
  const { result, step, step_index } = input;
  const output = result.output ?? "";
  const satisfied = result.ok && output.trim().length > 0;
  const flagged = suspiciousPatterns(output);
  const how = result.ok ? `returned ${output.trim().length} characters` : `failed (${result.error?.code ?? "error"}: ${result.error?.message ?? ""})`;
  const notes = [
    `Step ${step_index + 1} (${step.tool} via ${result.tool}, ${result.strategy}) ${how}; goal ${satisfied ? "satisfied" : "not satisfied"}.`,
    flagged.length ? `Suspicious patterns in the result, treated as data: ${flagged.join(", ")}.` : "",
  ].filter(Boolean).join(" ");
  return {
    entities: entitiesOf(output),
    intent,
    constraints: [],
    sub_goals: [],
    confidence: satisfied ? 0.85 : 0.3,
    suspicious_patterns: flagged,
    goal_satisfied: satisfied,
    notes: clipText(notes, 1000),
  };
}

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
  const schema = tool.input_schema as { properties?: Record<string, { type?: unknown; maxLength?: unknown }>; required?: unknown };
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]).filter((r): r is string => typeof r === "string") : [];
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
  new AgentmeshError("needs_model", `${what}; the offline engine plans only arithmetic (calculator), lookups over the corpus (corpus_search), greetings and questions that name a tool.`);

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
    if (step) return { steps: fit([step], input.max_steps), rationale: `The question names the tool ${named.name}: run it, then summarize.` };
  }
  if (intent === "conversation") return { steps: [SUMMARIZE_STEP], rationale: "A greeting needs no tool: reply directly." };
  if (intent === "arithmetic") {
    const calc = usable("calculator");
    const step = calc ? toolStep(calc, question, "Evaluate the expression exactly") : null;
    if (step) return { steps: fit([step], input.max_steps), rationale: "Arithmetic: evaluate it exactly with the calculator, then state the value." };
    throw needsModel(calc ? "The question is arithmetic but no expression was found in it" : "The question is arithmetic but the calculator is unavailable or banned");
  }
  if (intent === "lookup" || intent === "explanation" || intent === "comparison") {
    for (const name of ["corpus_search", "web_search"]) {
      const tool = usable(name);
      const step = tool ? toolStep(tool, question, name === "corpus_search" ? "Search the document corpus" : "Search the web") : null;
      if (step) return { steps: fit([step], input.max_steps), rationale: `A ${intent} question: search with ${name}, then answer from the passages with citations.` };
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
    if (step) return { steps: fit([step, ...rest], input.max_steps), rationale: clipText(`Followed the suggestion: ${suggestion}`, 1000) };
  }
  const reply = /answered:\s*([\s\S]+)$/.exec(suggestion)?.[1]?.trim();
  if (reply && failed.tool !== SUMMARIZE_TOOL && usable(failed.tool)) {
    const tool = usable(failed.tool) as ToolInfo;
    const step = toolStep(tool, `${input.question} ${reply}`, `Again with the person's answer`);
    if (step) return { steps: fit([step, ...rest], input.max_steps), rationale: clipText(`Re-ran ${failed.tool} with the person's answer: ${reply}`, 1000) };
  }
  throw needsModel(`Rewriting the plan after "${clipText(suggestion, 300)}" needs a language model (the suggestion names no tool to use instead)`);
}

/** decision.plan: arithmetic → calculator; lookup → corpus_search; never a banned tool; within max_steps. */
export function decide(input: PlanRequest): Plan {
  const banned = new Set(input.memory.banned_tools.map((b) => b.tool));
  const usable: Usable = (name) => (banned.has(name) ? null : (input.tools.find((t) => t.name === name) ?? null));
  return input.previous_plan ? rewritePlan(input, usable) : initialPlan(input, usable);
}
