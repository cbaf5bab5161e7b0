import {
  AgentmeshError,
  Capability,
  HALO_LIMITS,
  OPS,
  type EventDraft,
  type HaloData,
  type HaloSettings,
  type SpecialistAnswer,
  type SpecialistOutput,
  type WireError,
} from "@agentmesh/contracts";
import { COULD_NOT_ANSWER, clip } from "./critic-chain-messages.js";
import { stage } from "./events.js";
import { DEFAULT_DOMAIN_HINTS } from "./halo-domain-hints.js";
import { judge } from "./halo-judge.js";
import { answeredOutput, unavailableOutput } from "./halo-outputs.js";
import { FALLBACK_PLAN, overridePlan, parseCapabilityPlan, type PlanOutcome } from "./halo-plan.js";
import { synthesize } from "./halo-synthesis.js";
import { isResultOf } from "./ops.js";
import type { Control, ResultInput, TaskSpec, WorkflowDefinition, WorkflowInput } from "./types.js";

type Decided = { readonly data: HaloData; readonly control: Control; readonly events: readonly EventDraft[] };
type TaskInput = Extract<WorkflowInput, { kind: "result" | "failure" }>;

/** What a deployment without halo settings serves (tests, a coordinator built by hand): small talk, joined at 30 s. */
export const MINIMAL_HALO_SETTINGS: HaloSettings = {
  available_capabilities: ["chitchat"],
  join_deadline_ms: HALO_LIMITS.defaultJoinDeadlineMs,
  domain_hints: null,
};

/** The planner's stage name and the judge's, as `stage` events name them. */
const PLAN_STAGE = "plan";
const JUDGE_STAGE = "judge";

/**
 * Which role and op serves each capability (ARCHITECTURE.md, "Roles of the coming workflows"):
 * the corpus and the web are the retriever's, both MCP capabilities the mcp role's with the server
 * of the same name.
 */
export function specialistTask(capability: Capability, question: string, joinDeadlineMs: number): TaskSpec {
  const base = { attempt: 0, stage: capability, tag: capability, deadlineMs: joinDeadlineMs } as const;
  switch (capability) {
    case "graph":
      return {
        ...base,
        role: "graph",
        op: "answer",
        input: { question },
        description: "The graph specialist answers from the knowledge graph",
      };
    case "rag":
      return {
        ...base,
        role: "retriever",
        op: "answer",
        input: { question, source: "corpus" },
        description: "The rag specialist answers from the document corpus",
      };
    case "web":
      return {
        ...base,
        role: "retriever",
        op: "answer",
        input: { question, source: "web" },
        description: "The web specialist answers from a web search",
      };
    case "biomcp":
    case "llama_mcp":
      return {
        ...base,
        role: "mcp",
        op: "answer",
        input: { question, server: capability },
        description: `The ${capability} specialist asks the ${capability} MCP server`,
      };
    case "chitchat":
      return {
        ...base,
        role: "chat",
        op: "chitchat",
        input: { question },
        description: "The chitchat specialist answers as small talk",
      };
  }
}

const planTask = (data: HaloData): TaskSpec => ({
  role: "planner",
  op: "capabilities",
  input: { question: data.question, available: data.available_capabilities },
  attempt: 0,
  stage: PLAN_STAGE,
  description: `Plan which specialists to ask (available: ${data.available_capabilities.join(", ")})`,
});

/** A fault of ours: an input the runtime should never have passed on, or data a phase lacks. */
function internal(data: HaloData, message: string): Decided {
  const error = new AgentmeshError("internal", `halo: ${message}`, { component: "halo" }).toWire();
  const answer = `${COULD_NOT_ANSWER} (an internal error stopped the session)`;
  const ended: HaloData = {
    ...data,
    phase: "done",
    response_str: answer,
    error: clip(error.message, 4000),
    error_component: "halo",
  };
  return {
    data: ended,
    control: { kind: "fail", error, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) },
    events: [],
  };
}

/** The session's plan fixed: record it and dispatch one task per specialist, all in this one transition. */
function fanOut(data: HaloData, plan: PlanOutcome, source: HaloData["plan_source"]): Decided {
  const fellBack = plan.fallback !== null;
  const planned: HaloData = {
    ...data,
    phase: "specialists",
    capabilities: [...plan.capabilities],
    plan_source: fellBack ? "fallback" : source,
    plan_fallback_reason: fellBack ? clip(plan.fallback ?? "", 500) : null,
    pending: [...plan.capabilities],
  };
  const how = fellBack
    ? `fallback to ${FALLBACK_PLAN.join(", ")} (${plan.fallback})`
    : `${plan.capabilities.join(", ")} (${source})`;
  const tasks = plan.capabilities.map((c) => specialistTask(c, data.question, data.join_deadline_ms));
  return {
    data: planned,
    control: { kind: "dispatch", tasks },
    events: [stage(PLAN_STAGE, "completed", `Plan: ${how}`)],
  };
}

/** The planner's one answer: a valid plan is used (de-duplicated, servable tags only); anything else is the fallback. */
function onPlan(data: HaloData, input: TaskInput): Decided {
  if (input.kind === "failure" && input.role === "planner" && input.op === "capabilities") {
    // The planner falls back on any failure; it is never asked twice.
    const reason = `the planner failed (${input.error.code}): ${input.error.message}`;
    return fanOut(data, { capabilities: FALLBACK_PLAN, fallback: clip(reason, 500) }, "model");
  }
  if (!isResultOf(input, OPS.planner.capabilities))
    return internal(data, `planning awaits planner.capabilities, got ${input.role}.${input.op}`);
  const result = input.output;
  const plan =
    result.invalid_reason !== null
      ? { capabilities: FALLBACK_PLAN, fallback: result.invalid_reason }
      : parseCapabilityPlan(result, data.available_capabilities);
  return fanOut(data, plan, "model");
}

/** A specialist's answer, whichever specialist op gave it. */
function specialistAnswerOf(input: ResultInput): SpecialistAnswer | null {
  if (isResultOf(input, OPS.graph.answer)) return input.output;
  if (isResultOf(input, OPS.retriever.answer)) return input.output;
  if (isResultOf(input, OPS.mcp.answer)) return input.output;
  if (isResultOf(input, OPS.chat.chitchat)) return input.output;
  return null;
}

/** The specialist an input is from: its task's tag, which must be a pending capability. */
function specialistOf(data: HaloData, input: TaskInput): Capability | null {
  const tag = Capability.safeParse(input.tag);
  return tag.success && data.pending.includes(tag.data) ? tag.data : null;
}

/** One specialist came back (an answer, a failure, or its deadline: the join deadline, shared by all). */
function onSpecialist(data: HaloData, input: TaskInput): Decided {
  const capability = specialistOf(data, input);
  if (capability === null)
    return internal(
      data,
      `a ${input.role}.${input.op} outcome tagged "${input.tag ?? ""}" answers no pending specialist`,
    );
  const elapsed = input.elapsed_ms ?? 0;
  const answer = input.kind === "result" ? specialistAnswerOf(input) : null;
  if (input.kind === "result" && answer === null)
    return internal(data, `a ${input.role}.${input.op} result is no specialist's answer`);
  const output =
    answer === null
      ? unavailableOutput(capability, input.kind === "failure" ? input.error.code : "internal", elapsed)
      : answeredOutput(capability, answer, elapsed);
  const pending = data.pending.filter((c) => c !== capability);
  const events: EventDraft[] = [
    stage(capability, output.status === "answered" ? "completed" : "failed", outcomeLine(output)),
  ];
  // Every specialist shares one deadline, so one missing it means the join deadline has passed.
  const joinPassed = input.kind === "failure" && input.error.code === "deadline_exceeded";
  if (pending.length > 0 && !joinPassed)
    return {
      data: { ...data, pending, outputs: [...data.outputs, output] },
      control: { kind: "dispatch", tasks: [] },
      events,
    };
  const abandoned = joinPassed ? pending.map((c) => unavailableOutput(c, "deadline_exceeded", elapsed)) : [];
  for (const o of abandoned) events.push(stage(o.capability, "failed", outcomeLine(o)));
  return join({ ...data, pending: [], outputs: [...data.outputs, output, ...abandoned] }, events);
}

function outcomeLine(o: SpecialistOutput): string {
  if (o.status === "unavailable")
    return `The ${o.capability} specialist is unavailable (${o.error_code ?? "error"}) after ${o.latency_ms} ms`;
  return `The ${o.capability} specialist answered in ${o.latency_ms} ms with ${o.citations.length} citation(s)`;
}

/** All specialists in (or the join deadline passed): judge, synthesize, announce the sources, complete. */
function join(data: HaloData, events: EventDraft[]): Decided {
  const verdict = judge(data.outputs, data.capabilities, data.question, data.domain_hints ?? DEFAULT_DOMAIN_HINTS);
  const synthesis = synthesize(verdict);
  const response = clip(synthesis.response_str, HALO_LIMITS.maxResponseChars);
  const done: HaloData = {
    ...data,
    phase: "done",
    response_str: response,
    citations: [...synthesis.citations],
    judge_response: synthesis.judge_response,
  };
  const primary = verdict.primary ? `primary: ${verdict.primary.capability}` : "no specialist answered";
  events.push(stage(JUDGE_STAGE, "completed", `Judged ${data.outputs.length} specialist(s), ${primary}`));
  for (const c of synthesis.citations) events.push({ type: "source", ...c });
  // Completing ends the wait for any late specialist: the runtime clears its task, its result is dropped as not awaited.
  return {
    data: done,
    control: { kind: "complete", final_answer: response, final_reasoning_trace: reasoningTrace(done) },
    events,
  };
}

/** The trace of a halo session: the plan, each specialist's outcome, the judge's summary. */
function reasoningTrace(data: HaloData): string {
  const plan =
    data.plan_source === null
      ? "No plan was made."
      : `Plan (${data.plan_source}): ${data.capabilities.join(", ")}${data.plan_fallback_reason ? ` (${data.plan_fallback_reason})` : ""}.`;
  const lines = [plan, ...data.outputs.map((o) => `${outcomeLine(o)}.`)];
  if (data.judge_response) lines.push(`Judge:\n${data.judge_response}`);
  return clip(lines.join("\n"), 20_000);
}

function decide(data: HaloData, input: WorkflowInput): Decided {
  switch (input.kind) {
    case "start":
      if (data.plan_source === "override" || data.plan_source === "fallback") {
        // A plan given in the request: the planner (and its model call) is skipped.
        const plan = { capabilities: data.capabilities, fallback: data.plan_fallback_reason };
        return fanOut(data, plan, "override");
      }
      return { data, control: { kind: "dispatch", tasks: [planTask(data)] }, events: [] };
    case "result":
    case "failure":
      if (data.phase === "plan") return onPlan(data, input);
      if (data.phase === "specialists") return onSpecialist(data, input);
      return internal(data, `an outcome of ${input.role}.${input.op} arrived after the session was done`);
    case "user_reply":
      return internal(data, "halo never asks the user");
  }
}

/** A capability plan, specialists in parallel joined at a deadline, a judge and one cited answer. */
export const halo: WorkflowDefinition<HaloData> = {
  name: "halo",
  version: 1,
  init: (query, options, _messages, defaults) => {
    const settings = defaults?.halo ?? MINIMAL_HALO_SETTINGS;
    const requested = options.capabilities ? overridePlan(options.capabilities, settings.available_capabilities) : null;
    return {
      workflow: "halo",
      question: query,
      phase: "plan",
      available_capabilities: [...settings.available_capabilities],
      join_deadline_ms: settings.join_deadline_ms,
      domain_hints: settings.domain_hints,
      capabilities: requested ? [...requested.capabilities] : [],
      plan_source: requested ? (requested.fallback === null ? "override" : "fallback") : null,
      plan_fallback_reason: requested?.fallback ?? null,
      pending: [],
      outputs: [],
      response_str: null,
      citations: [],
      judge_response: null,
      error: null,
      error_component: null,
    };
  },
  decide,
  abort: (data: HaloData, error: WireError) => {
    const answer = clip(`${COULD_NOT_ANSWER} The session ended early (${error.code}): ${error.message}`, 20_000);
    const ended: HaloData = {
      ...data,
      phase: "done",
      pending: [],
      response_str: answer,
      error: clip(error.message, 4000),
      error_component: error.component ?? data.phase,
    };
    return { data: ended, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) };
  },
};
