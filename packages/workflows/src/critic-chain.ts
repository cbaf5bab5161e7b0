import { AgentmeshError, LIMITS, ROLES, type CriticChainData, type CriticVerdict, type EventDraft, type WireError } from "@agentmesh/contracts";
import { COULD_NOT_ANSWER, STEP_OPS, clip, orchestratorMessage, taskInput, type AgentStep } from "./critic-chain-messages.js";
import { stage } from "./events.js";
import type { Control, WorkflowDefinition, WorkflowInput } from "./types.js";

type Decided = { readonly data: CriticChainData; readonly control: Control; readonly events: readonly EventDraft[] };

const retries = (d: CriticChainData) => `retries ${d.retry_count}/${d.retry_limit}`;

/**
 * Step execution (seed: "Set Current Step", "Send Message"): current_step = next_step = `step`,
 * the seed's message, and one task. The runtime emits `stage running` when it really dispatches.
 */
function execute(data: CriticChainData, step: AgentStep, attempt: number, advance: boolean, events: EventDraft[]): Decided {
  const built = orchestratorMessage({ ...data, current_step: step, next_step: step }, step, advance);
  const { role, op } = STEP_OPS[step];
  const description = attempt === 0 ? built.message.content : `attempt ${attempt}: ${built.message.content}`;
  return {
    data: built.data,
    control: { kind: "dispatch", tasks: [{ role, op, attempt, input: taskInput(built.data, step, built.message), stage: step, description }] },
    events,
  };
}

/** The retry-limit exit: the run ends without asking a model (DESIGN decision on seed 004). */
function retryLimitExit(data: CriticChainData, events: EventDraft[]): Decided {
  const ended: CriticChainData = {
    ...data,
    current_step: "finalizer",
    next_step: "finalizer",
    final_answer: COULD_NOT_ANSWER,
    final_reasoning_trace: COULD_NOT_ANSWER,
  };
  events.push(stage("finalizer", "completed", `retry limit reached (${retries(ended)}); no model asked`));
  return { data: ended, control: { kind: "complete", final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER }, events };
}

/** A fault of ours (an input the runtime should never have passed on): fail loudly, never guess. */
function internal(data: CriticChainData, message: string, events: EventDraft[]): Decided {
  const error = new AgentmeshError("internal", `critic-chain: ${message}`, { component: "critic-chain" }).toWire();
  const ended = { ...data, final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER, error: error.message, error_component: "critic-chain" };
  return { data: ended, control: { kind: "fail", error, final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER }, events };
}

/** The seed's orchestrator decision logic: which step follows `current_step`, and the retry count. */
function route(data: CriticChainData): CriticChainData {
  switch (data.current_step) {
    case "input":
      return { ...data, next_step: "planner" };
    case "planner":
      return { ...data, next_step: "critic_planner" };
    case "critic_planner":
      if (data.critic_planner_decision === "reject") return { ...data, next_step: "planner", retry_count: data.retry_count + 1 };
      return data.research_steps.length > 0
        ? { ...data, next_step: "researcher", current_research_index: -1, research_results: [] }
        : { ...data, next_step: "expert" };
    case "researcher":
      return { ...data, next_step: "critic_researcher" };
    case "critic_researcher":
      if (data.critic_researcher_decision === "reject") return { ...data, next_step: "researcher", retry_count: data.retry_count + 1 };
      return { ...data, next_step: data.current_research_index >= data.research_steps.length - 1 ? "expert" : "researcher" };
    case "expert":
      return { ...data, next_step: "critic_expert" };
    case "critic_expert":
      if (data.critic_expert_decision === "reject") return { ...data, next_step: "expert", retry_count: data.retry_count + 1 };
      return { ...data, next_step: "finalizer" };
    case "finalizer":
      return data;
  }
}

/** Parses an output against its op's response schema (the runtime validated it already). */
function parseOutput<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }, output: unknown): T | null {
  const parsed = schema.safeParse(output);
  return parsed.success ? parsed.data : null;
}

/** Records a critic's verdict in the seed's `critic_<x>_decision/feedback` fields. */
function withVerdict(data: CriticChainData, step: "critic_planner" | "critic_researcher" | "critic_expert", v: CriticVerdict): CriticChainData {
  switch (step) {
    case "critic_planner":
      return { ...data, critic_planner_decision: v.decision, critic_planner_feedback: v.feedback };
    case "critic_researcher":
      return { ...data, critic_researcher_decision: v.decision, critic_researcher_feedback: v.feedback };
    case "critic_expert":
      return { ...data, critic_expert_decision: v.decision, critic_expert_feedback: v.feedback };
  }
}

/** The seed's agent state changes for a result of `step`; null when the output does not parse. */
function applyOutput(data: CriticChainData, step: AgentStep, output: unknown): { data: CriticChainData; summary: string } | null {
  switch (step) {
    case "planner": {
      const out = parseOutput(ROLES.planner.plan.response, output);
      if (!out) return null;
      return {
        data: { ...data, research_steps: out.research_steps, expert_steps: out.expert_steps },
        summary: `${out.research_steps.length} research steps, ${out.expert_steps.length} expert steps`,
      };
    }
    case "researcher": {
      const out = parseOutput(ROLES.researcher.research.response, output);
      if (!out) return null;
      const i = data.current_research_index;
      // Seed: append a new step's result, replace it when the step is re-researched after a reject.
      const research_results =
        data.research_results.length <= i ? [...data.research_results, out.result] : data.research_results.map((r, j) => (j === i ? out.result : r));
      return { data: { ...data, research_results }, summary: `research step ${i}: ${clip(out.result, 300)}` };
    }
    case "expert": {
      const out = parseOutput(ROLES.expert.answer.response, output);
      if (!out) return null;
      return { data: { ...data, expert_answer: out.expert_answer, expert_reasoning: out.expert_reasoning }, summary: `answer: ${clip(out.expert_answer, 300)}` };
    }
    case "finalizer": {
      const out = parseOutput(ROLES.finalizer.finalize.response, output);
      if (!out) return null;
      return { data: { ...data, final_answer: out.final_answer, final_reasoning_trace: out.final_reasoning_trace }, summary: "final answer written" };
    }
    case "critic_planner":
    case "critic_researcher":
    case "critic_expert": {
      const out = parseOutput(ROLES.critic.review_plan.response, output);
      if (!out) return null;
      return { data: withVerdict(data, step, out), summary: out.feedback ? `${out.decision}: ${out.feedback}` : out.decision };
    }
  }
}

/** The step the running task belongs to, or null when the input is not for it. */
function runningStep(data: CriticChainData, input: { role: string; op: string }): AgentStep | null {
  if (data.current_step === "input") return null;
  const expected = STEP_OPS[data.current_step];
  return expected.role === input.role && expected.op === input.op ? data.current_step : null;
}

function onResult(data: CriticChainData, step: AgentStep, output: unknown): Decided {
  const events: EventDraft[] = [];
  const applied = applyOutput(data, step, output);
  if (!applied) return internal(data, `output of ${step} does not match its schema`, events);
  if (step === "finalizer") {
    events.push(stage(step, "completed", applied.summary));
    const done = applied.data;
    return { data: done, control: { kind: "complete", final_answer: done.final_answer ?? "", final_reasoning_trace: done.final_reasoning_trace ?? "" }, events };
  }
  const routed = route(applied.data);
  const rejected = routed.retry_count > data.retry_count;
  events.push(stage(step, "completed", rejected ? `${applied.summary} (${retries(routed)})` : applied.summary));
  if (routed.retry_count >= routed.retry_limit) return retryLimitExit(routed, events);
  return executeNext(routed, events);
}

/** Executes the step the decision logic chose; "input" is never a successor, so it is our bug. */
function executeNext(routed: CriticChainData, events: EventDraft[]): Decided {
  const next = routed.next_step;
  if (next === "input") return internal(routed, `no step follows ${routed.current_step}`, events);
  // advance: the seed's message logic itself keeps the research index on a reject.
  return execute(routed, next, 0, true, events);
}

function onFailure(data: CriticChainData, step: AgentStep, attempt: number, error: WireError): Decided {
  const events: EventDraft[] = [];
  const why = `${error.code}: ${error.message}`;
  if (error.retryable) {
    // DESIGN decision: a retryable failure counts one retry, then the same step runs again.
    const counted = { ...data, retry_count: data.retry_count + 1 };
    events.push(stage(step, "failed", `failed (${why}); ${retries(counted)}`));
    if (counted.retry_count >= counted.retry_limit) return retryLimitExit(counted, events);
    return execute(counted, step, attempt + 1, false, events);
  }
  if (step === "finalizer") {
    const failed = { ...data, final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER, error: error.message, error_component: step };
    events.push(stage(step, "failed", `failed (${why})`));
    const err: WireError = { ...error, component: error.component ?? step };
    return { data: failed, control: { kind: "fail", error: err, final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER }, events };
  }
  // Seed: "Error Handler --> Finalizer", with the component that failed named by its step.
  const errored = { ...data, error: error.message, error_component: step, next_step: "finalizer" as const };
  events.push(stage(step, "failed", `failed (${why}); handing over to the finalizer`));
  events.push({ type: "error", code: error.code, message: error.message, component: step });
  return execute(errored, "finalizer", 0, false, events);
}

function decide(data: CriticChainData, input: WorkflowInput): Decided {
  switch (input.kind) {
    case "start":
      if (data.current_step !== "input") return internal(data, "start after the run began", []);
      return executeNext(route(data), []);
    case "result":
    case "failure": {
      const step = runningStep(data, input);
      if (!step) return internal(data, `${input.kind} of ${input.role}.${input.op} while ${data.current_step} runs`, []);
      return input.kind === "result" ? onResult(data, step, input.output) : onFailure(data, step, input.attempt, input.error);
    }
    case "user_reply":
      return internal(data, "critic-chain never asks the user", []);
  }
}

/** Seed 004: planner -> critic -> researcher -> critic -> expert -> critic -> finalizer, with a retry limit. */
export const criticChain: WorkflowDefinition<CriticChainData> = {
  name: "critic-chain",
  version: 1,
  init: (query, options) => ({
    workflow: "critic-chain",
    question: query,
    current_step: "input",
    next_step: "planner",
    research_steps: [],
    expert_steps: [],
    current_research_index: -1,
    research_results: [],
    expert_answer: "",
    expert_reasoning: "",
    critic_planner_decision: null,
    critic_planner_feedback: null,
    critic_researcher_decision: null,
    critic_researcher_feedback: null,
    critic_expert_decision: null,
    critic_expert_feedback: null,
    retry_count: 0,
    retry_limit: options.retry_limit ?? LIMITS.criticChainRetryLimit,
    final_answer: null,
    final_reasoning_trace: null,
    error: null,
    error_component: null,
  }),
  decide,
  abort: (data, error) => ({
    data: {
      ...data,
      final_answer: COULD_NOT_ANSWER,
      final_reasoning_trace: COULD_NOT_ANSWER,
      error: error.message,
      error_component: error.component ?? data.current_step,
    },
    final_answer: COULD_NOT_ANSWER,
    final_reasoning_trace: COULD_NOT_ANSWER,
  }),
};
