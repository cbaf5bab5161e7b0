import {
  AgentmeshError,
  CHAIN_MESSAGES,
  LIMITS,
  MAX_OBSERVATIONS,
  OPS,
  type ToolCallOutcome,
  type CriticChainData,
  type CriticVerdict,
  type EventDraft,
  type OpRequest,
  type PendingToolCall,
  type ToolObservation,
  type WireError,
} from "@agentmesh/contracts";
import {
  COULD_NOT_ANSWER,
  STEP_OPS,
  clip,
  orchestratorMessage,
  stepTask,
  withMessage,
  type AgentStep,
} from "./critic-chain-messages.js";
import {
  MINIMAL_CRITIC_CHAIN_SETTINGS,
  agentTools,
  countTurn,
  isLoopStep,
  loopOf,
  settleResearch,
  startTurn,
  withLoop,
  type AgentLoop,
  type LoopStep,
} from "./critic-chain-tools.js";
import { boundedArgs, isRecord, stage, toolResult } from "./events.js";
import { isResultOf, task } from "./ops.js";
import type { Control, ResultInput, TaskSpec, WorkflowDefinition, WorkflowInput } from "./types.js";

type Decided = { readonly data: CriticChainData; readonly control: Control; readonly events: readonly EventDraft[] };

/** Refused tool calls one researcher or expert turn may make; one more and the agent counts as failed (its failure goes to the finalizer). */
export const MAX_REFUSALS = 3;
/** One attempt of a tool call, and of a sandboxed code run (ms); each call gets two attempts. */
const TOOL_TIMEOUT_MS = 30_000;
const CODE_TIMEOUT_MS = 60_000;
const TOOL_MAX_ATTEMPTS = 2;
const CODE_TOOLS: ReadonlySet<string> = new Set(["run_python", "run_js"]);
/** An observation's content as the agent gets it back (characters). */
const OBSERVATION_MAX = 2000;

const retries = (d: CriticChainData) => `retries ${d.retry_count}/${d.retry_limit}`;

/**
 * Step execution: current_step = next_step = `step`, the orchestrator's message, and one task.
 * The runtime emits `stage running` when it really dispatches.
 */
function execute(
  data: CriticChainData,
  step: AgentStep,
  attempt: number,
  advance: boolean,
  events: EventDraft[],
): Decided {
  const built = orchestratorMessage({ ...data, current_step: step, next_step: step }, step, advance);
  const sent = withMessage(built.data, built.message);
  // A new turn of the researcher or the expert (not the same one run again after a failure) starts its tool rounds afresh.
  const turned = isLoopStep(step) && advance ? startTurn(sent, step) : sent;
  return dispatchAgent(
    turned,
    step,
    attempt,
    attempt === 0 ? built.message.content : `attempt ${attempt}: ${built.message.content}`,
    events,
  );
}

/** Dispatches the step's agent op with the request built from the state (the orchestrator's message rebuilt as it was sent). */
function dispatchAgent(
  data: CriticChainData,
  step: AgentStep,
  attempt: number,
  description: string,
  events: EventDraft[],
): Decided {
  const counted = isLoopStep(step) ? countTurn(data, step) : data;
  const { message } = orchestratorMessage(counted, step, false);
  return {
    data: counted,
    control: {
      kind: "dispatch",
      tasks: [stepTask(counted, step, message, { attempt, stage: step, description })],
    },
    events,
  };
}

/** The retry-limit exit: the run ends without asking a model (docs/workflows/critic-chain.md). */
function retryLimitExit(data: CriticChainData, events: EventDraft[]): Decided {
  const ended: CriticChainData = {
    ...data,
    current_step: "finalizer",
    next_step: "finalizer",
    final_answer: COULD_NOT_ANSWER,
    final_reasoning_trace: COULD_NOT_ANSWER,
  };
  events.push(stage("finalizer", "completed", `retry limit reached (${retries(ended)}); no model asked`));
  return {
    data: ended,
    control: { kind: "complete", final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER },
    events,
  };
}

/** A fault of ours (an input the runtime should never have passed on): fail loudly, never guess. */
function internal(data: CriticChainData, message: string, events: EventDraft[]): Decided {
  const error = new AgentmeshError("internal", `critic-chain: ${message}`, { component: "critic-chain" }).toWire();
  const ended = {
    ...data,
    final_answer: COULD_NOT_ANSWER,
    final_reasoning_trace: COULD_NOT_ANSWER,
    error: error.message,
    error_component: "critic-chain",
  };
  return {
    data: ended,
    control: { kind: "fail", error, final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER },
    events,
  };
}

/** critic-chain's decision rules: which step follows `current_step`, and the retry count. */
function route(data: CriticChainData): CriticChainData {
  switch (data.current_step) {
    case "input":
      return { ...data, next_step: "planner" };
    case "planner":
      return { ...data, next_step: "critic_planner" };
    case "critic_planner":
      if (data.critic_planner_decision === "reject")
        return { ...data, next_step: "planner", retry_count: data.retry_count + 1 };
      return data.research_steps.length > 0
        ? { ...data, next_step: "researcher", current_research_index: -1, research_results: [], researcher_states: {} }
        : { ...data, next_step: "expert" };
    case "researcher":
      return { ...data, next_step: "critic_researcher" };
    case "critic_researcher":
      if (data.critic_researcher_decision === "reject")
        return { ...data, next_step: "researcher", retry_count: data.retry_count + 1 };
      return {
        ...settleResearch(data),
        next_step: data.current_research_index >= data.research_steps.length - 1 ? "expert" : "researcher",
      };
    case "expert":
      return { ...data, next_step: "critic_expert" };
    case "critic_expert":
      if (data.critic_expert_decision === "reject")
        return { ...data, next_step: "expert", retry_count: data.retry_count + 1 };
      return { ...data, next_step: "finalizer" };
    case "finalizer":
      return data;
  }
}

/** Records a critic's verdict in the `critic_<x>_decision/feedback` fields. */
function withVerdict(
  data: CriticChainData,
  step: "critic_planner" | "critic_researcher" | "critic_expert",
  v: CriticVerdict,
): CriticChainData {
  switch (step) {
    case "critic_planner":
      return { ...data, critic_planner_decision: v.decision, critic_planner_feedback: v.feedback };
    case "critic_researcher":
      return { ...data, critic_researcher_decision: v.decision, critic_researcher_feedback: v.feedback };
    case "critic_expert":
      return { ...data, critic_expert_decision: v.decision, critic_expert_feedback: v.feedback };
  }
}

/** The agent state changes for a result of `step` (an answer, for the researcher and the expert); null when the result is of another op. */
function applyOutput(
  data: CriticChainData,
  step: AgentStep,
  input: ResultInput,
): { data: CriticChainData; summary: string } | null {
  if (isResultOf(input, OPS.planner.plan)) {
    const out = input.output;
    return {
      data: { ...data, research_steps: out.research_steps, expert_steps: out.expert_steps },
      summary: `${out.research_steps.length} research steps, ${out.expert_steps.length} expert steps`,
    };
  }
  if (isResultOf(input, OPS.researcher.research)) {
    const out = input.output;
    const i = data.current_research_index;
    // Append a new step's result, replace it when the step is re-researched after a reject.
    const research_results =
      data.research_results.length <= i
        ? [...data.research_results, out.result]
        : data.research_results.map((r, j) => (j === i ? out.result : r));
    return { data: { ...data, research_results }, summary: `research step ${i}: ${clip(out.result, 300)}` };
  }
  if (isResultOf(input, OPS.expert.answer)) {
    const out = input.output;
    return {
      data: { ...data, expert_answer: out.expert_answer, expert_reasoning: out.expert_reasoning },
      summary: `answer: ${clip(out.expert_answer, 300)}`,
    };
  }
  if (isResultOf(input, OPS.finalizer.finalize)) {
    const out = input.output;
    return {
      data: { ...data, final_answer: out.final_answer, final_reasoning_trace: out.final_reasoning_trace },
      summary: "final answer written",
    };
  }
  const verdict = criticVerdictOf(input);
  if (verdict && (step === "critic_planner" || step === "critic_researcher" || step === "critic_expert"))
    return {
      data: withVerdict(data, step, verdict),
      summary: verdict.feedback ? `${verdict.decision}: ${verdict.feedback}` : verdict.decision,
    };
  return null;
}

/** A critic's verdict, whichever of the three reviews gave it. */
function criticVerdictOf(input: ResultInput): CriticVerdict | null {
  if (isResultOf(input, OPS.critic.review_plan)) return input.output;
  if (isResultOf(input, OPS.critic.review_research)) return input.output;
  if (isResultOf(input, OPS.critic.review_answer)) return input.output;
  return null;
}

/** The task the session awaits: its step's agent op, or the executor.call of the agent's tool call in flight (tag `tool`). */
function awaited(data: CriticChainData): { step: AgentStep; role: string; op: string; tool: boolean } | null {
  const step = data.current_step;
  if (step === "input") return null;
  if (isLoopStep(step) && loopOf(data, step)?.pending_call) return { step, role: "executor", op: "call", tool: true };
  return { step, ...STEP_OPS[step], tool: false };
}

/** The tool call a researcher or expert turn asked for, or null when it answered. */
function toolActionOf(input: ResultInput): { tool: string; arguments_json: string } | null {
  const turn = isResultOf(input, OPS.researcher.research)
    ? input.output
    : isResultOf(input, OPS.expert.answer)
      ? input.output
      : null;
  return turn?.action === "tool" ? turn : null;
}

function onResult(data: CriticChainData, step: AgentStep, input: ResultInput): Decided {
  const events: EventDraft[] = [];
  if (isLoopStep(step)) {
    const call = toolActionOf(input);
    if (call) return onToolAction(data, step, call.tool, call.arguments_json, events);
  }
  const applied = applyOutput(data, step, input);
  if (!applied) return internal(data, `output of ${step} does not match its schema`, events);
  // The completion message back to the orchestrator.
  const told = withMessage(applied.data, {
    sender: step,
    receiver: "orchestrator",
    type: "response",
    content: applied.summary,
    step_id: step === "researcher" ? data.current_research_index : null,
  });
  return settle(data, step, { data: told, summary: applied.summary }, events);
}

/** An agent's output applied: the finalizer completes the run, any other step is routed (and a reject counted). */
function settle(
  data: CriticChainData,
  step: AgentStep,
  applied: { data: CriticChainData; summary: string },
  events: EventDraft[],
): Decided {
  if (step === "finalizer") {
    events.push(stage(step, "completed", applied.summary));
    const done = applied.data;
    return {
      data: done,
      control: {
        kind: "complete",
        final_answer: done.final_answer ?? "",
        final_reasoning_trace: done.final_reasoning_trace ?? "",
      },
      events,
    };
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
  // advance: the message building itself keeps the research index on a reject.
  return execute(routed, next, 0, true, events);
}

function onFailure(
  data: CriticChainData,
  step: AgentStep,
  attempt: number,
  error: WireError,
  events: EventDraft[] = [],
): Decided {
  const why = `${error.code}: ${error.message}`;
  if (error.retryable) {
    // A retryable failure counts one retry, then the same step runs again (docs/workflows/critic-chain.md).
    const counted = { ...data, retry_count: data.retry_count + 1 };
    events.push(stage(step, "failed", `failed (${why}); ${retries(counted)}`));
    if (counted.retry_count >= counted.retry_limit) return retryLimitExit(counted, events);
    return execute(counted, step, attempt + 1, false, events);
  }
  if (step === "finalizer") {
    const failed = {
      ...data,
      final_answer: COULD_NOT_ANSWER,
      final_reasoning_trace: COULD_NOT_ANSWER,
      error: error.message,
      error_component: step,
    };
    events.push(stage(step, "failed", `failed (${why})`));
    const err: WireError = { ...error, component: error.component ?? step };
    return {
      data: failed,
      control: { kind: "fail", error: err, final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER },
      events,
    };
  }
  // A non-retryable failure goes to the finalizer, with the component that failed named by its step.
  const errored = { ...data, error: error.message, error_component: step, next_step: "finalizer" as const };
  events.push(stage(step, "failed", `failed (${why}); handing over to the finalizer`));
  events.push({ type: "error", code: error.code, message: error.message, component: step });
  return execute(errored, "finalizer", 0, false, events);
}

const observed = (loop: AgentLoop, o: ToolObservation): ToolObservation[] =>
  [...loop.observations, { ...o, content: clip(o.content, OBSERVATION_MAX) }].slice(-MAX_OBSERVATIONS);

/** A researcher or expert asked for a tool: run it as an executor.call task, or refuse it (not offered, no rounds left) and ask again. */
function onToolAction(
  data: CriticChainData,
  step: LoopStep,
  tool: string,
  argumentsJson: string,
  events: EventDraft[],
): Decided {
  const loop = loopOf(data, step);
  if (!loop) return internal(data, `the ${step} called a tool outside its turn`, events);
  // The op's response schema checked that the arguments are a JSON object.
  const parsed: unknown = JSON.parse(argumentsJson);
  const args = isRecord(parsed) ? parsed : {};
  const offered = agentTools(step, data.tools_available);
  if (!offered.includes(tool)) {
    return refuse(
      data,
      step,
      loop,
      tool,
      args,
      `The tool "${clip(tool, 80)}" is not one you were offered (${offered.join(", ") || "none"}). Use an offered tool or answer.`,
      events,
    );
  }
  if (loop.tool_rounds >= data.max_tool_rounds) {
    return refuse(
      data,
      step,
      loop,
      tool,
      args,
      `No tool rounds are left in this turn (all ${data.max_tool_rounds} used). Answer now with what you have.`,
      events,
    );
  }
  events.push(stage(step, "completed", `The ${step} calls ${tool}`));
  const calls = data.tool_calls + 1;
  const call: PendingToolCall = { id: `call-${calls}`, tool, arguments: args };
  const d = withLoop({ ...data, tool_calls: calls }, step, { ...loop, pending_call: call });
  return { data: d, control: { kind: "dispatch", tasks: [toolTask(d, step, call)] }, events };
}

/** The executor.call task of an agent's tool call, allowed only among the agent's served tools. */
function toolTask(d: CriticChainData, step: LoopStep, call: PendingToolCall): TaskSpec {
  const input: OpRequest<"executor", "call"> = {
    tool: call.tool,
    arguments: call.arguments,
    allowed: agentTools(step, d.tools_available),
    limits: {
      max_attempts: TOOL_MAX_ATTEMPTS,
      timeout_ms: CODE_TOOLS.has(call.tool) ? CODE_TIMEOUT_MS : TOOL_TIMEOUT_MS,
    },
  };
  return task(OPS.executor.call, input, {
    attempt: 0,
    stage: `${step}_tools`,
    tag: "tool",
    description: `The ${step} calls ${call.tool}`,
    toolCall: { id: call.id, tool: call.tool, args: call.arguments },
  });
}

/** A tool call the agent may not make: it is told why (as the tool's result) and asked again; past MAX_REFUSALS its turn fails. */
function refuse(
  data: CriticChainData,
  step: LoopStep,
  loop: AgentLoop,
  tool: string,
  args: Record<string, unknown>,
  message: string,
  events: EventDraft[],
): Decided {
  const refused: AgentLoop = {
    ...loop,
    refusals: loop.refusals + 1,
    observations: observed(loop, {
      tool: clip(tool, 80),
      arguments: boundedArgs(args).args,
      ok: false,
      content: message,
    }),
  };
  const d = withLoop(data, step, refused);
  if (refused.refusals > MAX_REFUSALS) {
    const error = new AgentmeshError(
      "model_invalid_output",
      `the ${step} asked for ${refused.refusals} tool calls it may not make in one turn instead of answering`,
      { retryable: false, component: step },
    );
    return onFailure(d, step, 0, error.toWire(), events);
  }
  events.push(stage(step, "completed", `The ${step}'s call of ${clip(tool, 80)} was refused: ${message}`));
  return dispatchAgent(d, step, 0, `The ${step} is asked again: its tool call was refused`, events);
}

/** A tool call's outcome: announced, observed, one round counted, and the agent asked again with it. */
function onToolOutcome(data: CriticChainData, step: LoopStep, outcome: ToolCallOutcome, events: EventDraft[]): Decided {
  const loop = loopOf(data, step);
  const call = loop?.pending_call;
  if (!loop || !call) return internal(data, `a tool outcome came back with no call of the ${step} pending`, events);
  events.push(toolResult(call.id, call.tool, outcome.ok, outcome.content, outcome.latency_ms));
  events.push(
    stage(
      `${step}_tools`,
      outcome.ok ? "completed" : "failed",
      `${call.tool} ${outcome.ok ? "answered" : `failed (${outcome.error?.code ?? "error"})`}`,
    ),
  );
  const observation: ToolObservation = {
    tool: call.tool,
    arguments: boundedArgs(call.arguments).args,
    ok: outcome.ok,
    content: outcome.content,
  };
  const d = withLoop(data, step, {
    ...loop,
    pending_call: null,
    tool_rounds: loop.tool_rounds + 1,
    observations: observed(loop, observation),
  });
  return dispatchAgent(d, step, 0, `The ${step} goes on with what ${call.tool} returned`, events);
}

/** The executor's task failed (after its own retries, or at its deadline): the call failed, which the agent is told like any tool failure. */
function toolFailed(data: CriticChainData, step: LoopStep, error: WireError, elapsedMs: number): ToolCallOutcome {
  const tool = loopOf(data, step)?.pending_call?.tool ?? "unknown";
  return {
    tool,
    ok: false,
    content: clip(`${error.code}: ${error.message}`, 4000),
    error: { code: error.code, message: clip(error.message, 500), retryable: error.retryable },
    latency_ms: elapsedMs,
    attempts: 0,
    citations: [],
    code: null,
  };
}

function decide(data: CriticChainData, input: WorkflowInput): Decided {
  switch (input.kind) {
    case "start":
      if (data.current_step !== "input") return internal(data, "start after the run began", []);
      return executeNext(route(data), []);
    case "result":
    case "failure": {
      const task = awaited(data);
      if (!task || task.role !== input.role || task.op !== input.op || task.tool !== (input.tag === "tool")) {
        return internal(data, `${input.kind} of ${input.role}.${input.op} while ${data.current_step} runs`, []);
      }
      const { step } = task;
      if (task.tool && isLoopStep(step)) {
        if (isResultOf(input, OPS.executor.call)) return onToolOutcome(data, step, input.output, []);
        if (input.kind === "failure")
          return onToolOutcome(data, step, toolFailed(data, step, input.error, input.elapsed_ms ?? 0), []);
      }
      return input.kind === "result" ? onResult(data, step, input) : onFailure(data, step, input.attempt, input.error);
    }
    case "user_reply":
      return internal(data, "critic-chain never asks the user", []);
  }
}

/** Planner -> critic -> researcher -> critic -> expert -> critic -> finalizer, with a retry limit. */
export const criticChain: WorkflowDefinition<CriticChainData> = {
  name: "critic-chain",
  version: 1,
  init: (query, options, _messages, defaults) => ({
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
    messages: [
      {
        sender: "user",
        receiver: "orchestrator",
        type: "question",
        content: clip(query, CHAIN_MESSAGES.contentChars),
        step_id: null,
      },
    ],
    researcher_states: {},
    expert_state: null,
    tools_available: [...(defaults?.criticChain ?? MINIMAL_CRITIC_CHAIN_SETTINGS).tools],
    max_tool_rounds: (defaults?.criticChain ?? MINIMAL_CRITIC_CHAIN_SETTINGS).max_tool_rounds,
    tool_calls: 0,
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
