import {
  ExecutionStrategy,
  OPS,
  AgentmeshError,
  type OpOutput,
  type BlackboardData,
  type EventDraft,
  type Intent,
  type NextAction,
  type StepResult,
  type WireError,
} from "@agentmesh/contracts";
import {
  CAPS,
  append,
  currentStep,
  initialData,
  querySnapshot,
  rememberReply,
  traced,
  withPlan,
} from "./blackboard-data.js";
import { failedStrategy, onStrategy, representativeFailure, startStep, toolResults } from "./blackboard-execution.js";
import {
  acceptability,
  collectCitations,
  failedStepAction,
  finalAnswer,
  giveUpAnswer,
  reasoningTrace,
  recoverFrom,
  verdictOf,
  withReply,
} from "./blackboard-policy.js";
import {
  AGENT_MAX_ATTEMPTS,
  AGENT_STAGE,
  blackboardFault,
  agentTask,
  critiqueTask,
  listToolsTask,
  memoryTask,
  perceiveQueryTask,
  perceiveResultTask,
  planTask,
  retrievalQuery,
  retrieveTask,
} from "./blackboard-tasks.js";
import { COULD_NOT_ANSWER, clip } from "./critic-chain-messages.js";
import { retryBackoffMs } from "./blackboard-strategy.js";
import { stage } from "./events.js";
import { isResultOf } from "./ops.js";
import type { Control, ResultInput, TaskSpec, WorkflowDefinition, WorkflowInput } from "./types.js";

type Decided = { readonly data: BlackboardData; readonly control: Control; readonly events: readonly EventDraft[] };
type TaskInput = Extract<WorkflowInput, { kind: "result" | "failure" }>;

/** Intents answered without retrieval: arithmetic goes straight to the calculator, small talk needs no sources. */
export const NO_RETRIEVAL_INTENTS: readonly Intent[] = ["arithmetic", "conversation"];

const completed = (name: string, description: string): EventDraft => stage(name, "completed", description);
const failed = (name: string, description: string): EventDraft => stage(name, "failed", description);
const dispatch = (
  data: BlackboardData,
  tasks: readonly TaskSpec[],
  events: readonly EventDraft[],
  abandon = false,
): Decided => ({
  data,
  control: abandon ? { kind: "dispatch", tasks, abandon } : { kind: "dispatch", tasks },
  events,
});

/** Which op each phase waits for. */
const EXPECTED: Readonly<Record<BlackboardData["phase"], readonly string[]>> = {
  intake: ["perception.perceive", "executor.list_tools"],
  remember_query: ["memory.update"],
  retrieve: ["retriever.retrieve"],
  plan: ["decision.plan"],
  execute: ["executor.execute"],
  perceive_result: ["perception.perceive"],
  critique: ["critic.report"],
  remember_step: ["memory.update"],
  awaiting_user: [],
  remember_reply: ["memory.update"],
  done: [],
};

/** Marks the active plan with a final status, if there is one. */
function closePlan(data: BlackboardData, status: "completed" | "abandoned"): BlackboardData {
  const plan = data.plan_versions.at(-1);
  return plan && plan.status === "active" ? withPlan(data, { ...plan, status }) : data;
}

/** An agent failure that stops the session: a clear final message naming what failed. */
function failWith(
  data: BlackboardData,
  error: WireError,
  component: string,
  what: string,
  events: EventDraft[],
): Decided {
  const message = giveUpAnswer(`${what} (${error.code}: ${error.message})`);
  const ended = traced(closePlan(data, "abandoned"), `Stopped: ${what} (${error.code}).`);
  const trace = reasoningTrace(ended);
  const final = {
    ...ended,
    phase: "done" as const,
    final_answer: message,
    final_reasoning_trace: trace,
    error: error.message,
    error_component: component,
  };
  return {
    data: final,
    control: {
      kind: "fail",
      error: { ...error, component: error.component ?? component },
      final_answer: message,
      final_reasoning_trace: trace,
    },
    events,
  };
}

/** A fault of ours (an input the runtime should never have passed on, data that lacks what a phase needs). */
const internal = (data: BlackboardData, message: string, events: EventDraft[] = []): Decided =>
  failWith(
    data,
    new AgentmeshError("internal", `blackboard: ${message}`, { component: "blackboard" }).toWire(),
    "blackboard",
    "an internal error stopped the session",
    events,
  );

/** Limits ran out: the session completes with a clear message instead of an answer. */
function giveUp(data: BlackboardData, reason: string, events: EventDraft[]): Decided {
  const ended = traced(closePlan(data, "abandoned"), `Gave up: ${reason}`);
  const answer = giveUpAnswer(reason);
  const trace = reasoningTrace(ended);
  events.push(failed("coordinator", `gave up: ${reason}`));
  return {
    data: { ...ended, phase: "done", final_answer: answer, final_reasoning_trace: trace },
    control: { kind: "complete", final_answer: answer, final_reasoning_trace: trace },
    events,
  };
}

function complete(data: BlackboardData, summary: StepResult, events: EventDraft[]): Decided {
  const citations = collectCitations(data, summary);
  const ended = traced(
    closePlan(data, "completed"),
    `Answered from the summarize step with ${citations.length} source(s).`,
  );
  const answer = finalAnswer(summary, citations);
  const trace = reasoningTrace(ended);
  return {
    data: { ...ended, phase: "done", citations, final_answer: answer, final_reasoning_trace: trace },
    control: { kind: "complete", final_answer: answer, final_reasoning_trace: trace },
    events,
  };
}

const toMemory = (
  data: BlackboardData,
  phase: "remember_query" | "remember_step" | "remember_reply",
  events: EventDraft[],
  abandon = false,
): Decided => {
  const next = { ...data, phase };
  return dispatch(next, [memoryTask(next, 0)], events, abandon);
};

const toPlan = (data: BlackboardData, events: EventDraft[]): Decided => {
  const next = { ...data, phase: "plan" as const };
  return dispatch(next, [planTask(next, 0)], events);
};

function execute(data: BlackboardData, events: EventDraft[]): Decided {
  const started = startStep(data);
  return dispatch(started.data, started.tasks, events);
}

/** Once both the question's perception and the tool list are in, memory takes in the perception. */
function afterIntake(data: BlackboardData, events: EventDraft[]): Decided {
  if (querySnapshot(data) === null || data.tools === null) return dispatch(data, [], events);
  return toMemory(data, "remember_query", events);
}

/** The retrieval rule: retrieve unless the question is arithmetic or small talk. */
function afterQueryMemory(data: BlackboardData, events: EventDraft[]): Decided {
  const intent = querySnapshot(data)?.intent ?? "other";
  if (NO_RETRIEVAL_INTENTS.includes(intent))
    return toPlan(traced(data, `Retrieval skipped: the question is ${intent}.`), events);
  const next = { ...data, phase: "retrieve" as const };
  return dispatch(next, [retrieveTask(next, 0)], events);
}

/** Carries out what was decided about the step once the memory has taken in its outcome. */
function act(data: BlackboardData, action: NextAction, events: EventDraft[]): Decided {
  switch (action.kind) {
    case "advance":
      return advance(data, events);
    case "retry":
      return execute(
        traced(
          { ...data, step_retries: data.step_retries + 1 },
          `Retry ${data.step_retries + 1}/${data.limits.max_retries}: ${action.reason}`,
        ),
        events,
      );
    case "rewrite": {
      const at = currentStep(data);
      if (!at) throw blackboardFault("no current step on the blackboard");
      const count = data.rewrite_count + 1;
      const next = traced(
        {
          ...data,
          phase: "plan",
          rewrite_count: count,
          rewrite_request: { failed_step_index: at.index, suggestion: action.suggestion },
        },
        `Rewrite ${count}/${data.limits.max_rewrites} requested after step ${at.index + 1}: ${action.suggestion}`,
      );
      return dispatch(next, [planTask(next, 0)], events);
    }
    case "ask_human": {
      const next = traced(
        {
          ...data,
          phase: "awaiting_user",
          questions_asked: data.questions_asked + 1,
          question_for_human: action.question,
        },
        `Asked a person: ${action.question}`,
      );
      return { data: next, control: { kind: "await_user", question: action.question }, events };
    }
    case "give_up":
      return giveUp(data, action.reason, events);
  }
}

/** The step was accepted: keep its result for the summary, then the next step, or the answer after `summarize`. */
function advance(data: BlackboardData, events: EventDraft[]): Decided {
  const at = currentStep(data);
  const result = data.step_outcome;
  if (!at || !result || !result.ok) throw blackboardFault("no accepted step result on the blackboard");
  if (at.last) return complete(data, result, events);
  const accepted = {
    plan_version: at.plan.version,
    step_index: at.index,
    description: at.step.description,
    tool: result.tool,
    strategy: result.strategy,
    output: clip(result.output ?? "", 2000),
    citations: result.citations.slice(0, 5),
  };
  const moved = withPlan(
    { ...data, step_retries: 0, accepted_results: append(data.accepted_results, [accepted], CAPS.accepted_results) },
    { ...at.plan, current_index: at.index + 1 },
  );
  return execute(moved, events);
}

function onPlan(data: BlackboardData, plan: OpOutput<"decision", "plan">, events: EventDraft[]): Decided {
  const max = data.limits.max_steps;
  // A plan longer than the profile allows keeps its first steps and its summarize step.
  const steps = plan.steps.length > max ? [...plan.steps.slice(0, max - 1), ...plan.steps.slice(-1)] : plan.steps;
  const rewrite = data.rewrite_request;
  const versions = data.plan_versions.map((p) => (p.status === "active" ? { ...p, status: "superseded" as const } : p));
  const version = {
    version: versions.length + 1,
    steps,
    rationale: plan.rationale,
    current_index: 0,
    status: "active" as const,
    reason: rewrite ? ("rewrite" as const) : ("initial" as const),
    rewrite_suggestion: rewrite ? rewrite.suggestion : null,
  };
  const cut = steps.length < plan.steps.length ? ` (cut from ${plan.steps.length} to ${max} steps)` : "";
  const summary = `plan v${version.version}: ${steps.map((s) => s.tool).join(" → ")}${cut}`;
  events.push(completed("decision", summary));
  const next = traced(
    { ...data, plan_versions: [...versions, version], rewrite_request: null, step_retries: 0 },
    `Plan v${version.version}${rewrite ? " (rewrite)" : ""}: ${steps.map((s, i) => `${i + 1}. ${s.description} [${s.tool}]`).join(" ")}${cut}`,
  );
  return execute(next, events);
}

/** One executor strategy came back (a result, a failure, or its deadline). */
function onExecution(data: BlackboardData, input: TaskInput, events: EventDraft[]): Decided {
  const strategy = ExecutionStrategy.safeParse(input.tag);
  if (!strategy.success) return internal(data, `executor task without a strategy tag (${String(input.tag)})`, events);
  if (input.kind === "result" && !isResultOf(input, OPS.executor.execute))
    return internal(data, `a ${input.role}.${input.op} result where an executor strategy was awaited`, events);
  const result =
    input.kind === "result" ? input.output : failedStrategy(data, strategy.data, input.error, input.elapsed_ms ?? 0);
  // All strategies of a round share one deadline, so any of them missing it means the join deadline passed.
  const deadlinePassed = input.kind === "failure" && input.error.code === "deadline_exceeded";
  const step = onStrategy(data, strategy.data, result, deadlinePassed);
  events.push(...toolResults(data, strategy.data, result, step, input.elapsed_ms ?? 0));
  if (step.kind === "wait") return dispatch(step.data, step.tasks, events);
  const joined = step.data;
  if (step.chosen) {
    events.push(completed("executor", `chose ${step.chosen.strategy} (${step.chosen.tool})`));
    const next = { ...joined, phase: "perceive_result" as const, step_outcome: step.chosen };
    return dispatch(next, [perceiveResultTask(next, 0)], events, step.abandon);
  }
  const results = joined.round?.results ?? [];
  const action = failedStepAction(joined, results);
  events.push(failed("executor", `every strategy failed; next: ${action.kind}`));
  return toMemory(
    { ...joined, step_outcome: representativeFailure(results), next_action: action },
    "remember_step",
    events,
    step.abandon,
  );
}

function onReport(data: BlackboardData, report: OpOutput<"critic", "report">, events: EventDraft[]): Decided {
  const at = currentStep(data);
  if (!at) throw blackboardFault("no current step on the blackboard");
  const action = verdictOf(data, report);
  const record = { plan_version: at.plan.version, step_index: at.index, retry: data.step_retries, report };
  const skipped =
    report.requires_human_input && action.kind !== "ask_human"
      ? "; the person was not asked again (question limit reached)"
      : "";
  const judged = acceptability(data, report);
  const overruled = judged.contradiction === null ? "" : ` (${judged.contradiction})`;
  const verdict = `${judged.acceptable ? "acceptable" : "not acceptable"}${overruled}, quality ${report.quality}, hallucination risk ${report.hallucination_risk}, next: ${action.kind}${skipped}`;
  events.push(completed("critic", verdict));
  const next = traced(
    { ...data, critic_reports: append(data.critic_reports, [record], CAPS.critic_reports), next_action: action },
    `Critic on step ${at.index + 1}: ${verdict}.`,
  );
  return toMemory(next, "remember_step", events);
}

/** After the person's answer is in memory: go on if the step was acceptable, else recover with the answer as advice. */
function afterReply(data: BlackboardData, events: EventDraft[]): Decided {
  const asked = data.next_action;
  if (asked?.kind !== "ask_human") throw blackboardFault("no pending question on the blackboard");
  if (asked.acceptable) return advance(data, events);
  const suggestion = withReply(asked.rewrite_suggestion, asked.question, data.user_replies.at(-1) ?? "");
  const at = currentStep(data);
  const why = `Step ${at ? at.index + 1 : "?"} was not acceptable, even with the person's answer`;
  return act(data, recoverFrom(data, { preferRewrite: true, retryUseful: true, suggestion, why }), events);
}

function afterMemory(data: BlackboardData, events: EventDraft[]): Decided {
  switch (data.phase) {
    case "remember_query":
      return afterQueryMemory(data, events);
    case "remember_step":
      if (!data.next_action) throw blackboardFault("no next action on the blackboard");
      return act(data, data.next_action, events);
    case "remember_reply":
      return afterReply(data, events);
    case "intake":
    case "retrieve":
    case "plan":
    case "execute":
    case "perceive_result":
    case "critique":
    case "awaiting_user":
    case "done":
      return internal(data, `memory answered in phase ${data.phase}`, events);
  }
}

function onPerception(
  data: BlackboardData,
  snapshot: OpOutput<"perception", "perceive">,
  events: EventDraft[],
): Decided {
  const about = `intent ${snapshot.intent}, confidence ${snapshot.confidence}, ${snapshot.entities.length} entities, ${snapshot.sub_goals.length} sub-goals`;
  const flags =
    snapshot.suspicious_patterns.length > 0 ? `; suspicious: ${snapshot.suspicious_patterns.join(", ")}` : "";
  events.push(completed("perception", `${about}${flags}`));
  if (data.phase === "intake") {
    const record = { source: "query" as const, plan_version: null, step_index: null, snapshot };
    return afterIntake(
      traced(
        { ...data, perception_snapshots: append(data.perception_snapshots, [record], CAPS.perception_snapshots) },
        `Perception of the question: ${about}${flags}.`,
      ),
      events,
    );
  }
  const at = currentStep(data);
  if (!at) throw blackboardFault("no current step on the blackboard");
  const record = { source: "step_result" as const, plan_version: at.plan.version, step_index: at.index, snapshot };
  const next = {
    ...data,
    phase: "critique" as const,
    step_perception: snapshot,
    perception_snapshots: append(data.perception_snapshots, [record], CAPS.perception_snapshots),
  };
  return dispatch(next, [critiqueTask(next, 0)], events);
}

function onTools(data: BlackboardData, { tools }: OpOutput<"executor", "list_tools">, events: EventDraft[]): Decided {
  events.push(completed("tools", `${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`));
  return afterIntake(
    traced({ ...data, tools }, `Tools available: ${tools.map((t) => t.name).join(", ") || "none"}.`),
    events,
  );
}

function onMemory(data: BlackboardData, memory: OpOutput<"memory", "update">, events: EventDraft[]): Decided {
  events.push(
    completed(
      "memory",
      `${memory.short_term.length} short-term items, ${memory.banned_tools.length} banned tools, ${memory.successful_tools.length} successful tools`,
    ),
  );
  return afterMemory({ ...data, memory }, events);
}

function onRetrieval(data: BlackboardData, bundle: OpOutput<"retriever", "retrieve">, events: EventDraft[]): Decided {
  const request = retrievalQuery(data);
  const sources = ["memory", "corpus", "web"]
    .map((s) => `${s} ${bundle.items.filter((i) => i.source === s).length}`)
    .join(", ");
  events.push(completed("retriever", `${bundle.items.length} items (${sources})`));
  const record = { query: request.query, strategies: request.strategies, bundle };
  return toPlan(
    traced(
      { ...data, retrieval_bundles: append(data.retrieval_bundles, [record], CAPS.retrieval_bundles) },
      `Retrieved ${bundle.items.length} items (${sources}).`,
    ),
    events,
  );
}

/** An agent's result, typed by its op (the runtime validated it), goes to that op's handler. */
function onResult(data: BlackboardData, input: ResultInput, events: EventDraft[]): Decided {
  if (isResultOf(input, OPS.perception.perceive)) return onPerception(data, input.output, events);
  if (isResultOf(input, OPS.executor.list_tools)) return onTools(data, input.output, events);
  if (isResultOf(input, OPS.memory.update)) return onMemory(data, input.output, events);
  if (isResultOf(input, OPS.retriever.retrieve)) return onRetrieval(data, input.output, events);
  if (isResultOf(input, OPS.decision.plan)) return onPlan(data, input.output, events);
  if (isResultOf(input, OPS.critic.report)) return onReport(data, input.output, events);
  return internal(data, `no handler for ${input.role}.${input.op}`, events);
}

/** A typed agent failure that retries could not fix: each role's rule. */
function exhausted(data: BlackboardData, key: string, error: WireError, events: EventDraft[]): Decided {
  const why = `${error.code}: ${clip(error.message, 300)}`;
  switch (key) {
    case "perception.perceive":
      if (data.phase === "intake")
        return failWith(
          data,
          error,
          "perception",
          "The question could not be analysed by the perception agent",
          events,
        );
      {
        // Without a reading of the result the critic still judges the result itself.
        const next = traced(
          { ...data, phase: "critique", step_perception: null },
          `Perception of the step result failed (${why}); the critic reviews it without.`,
        );
        return dispatch(next, [critiqueTask(next, 0)], events);
      }
    case "executor.list_tools":
      return afterIntake(
        traced({ ...data, tools: [] }, `The executor did not list its tools (${why}); planning without a tool list.`),
        events,
      );
    case "memory.update": {
      const memory =
        data.phase === "remember_reply" ? rememberReply(data.memory, data.user_replies.at(-1) ?? "") : data.memory;
      return afterMemory(
        traced({ ...data, memory }, `Memory update failed (${why}); the memory stays as it was.`),
        events,
      );
    }
    case "retriever.retrieve":
      return toPlan(traced(data, `Retrieval failed (${why}); planning without it.`), events);
    case "decision.plan":
      return failWith(
        data,
        error,
        "decision",
        data.rewrite_request ? "The plan could not be rewritten" : "No plan could be made",
        events,
      );
    case "critic.report":
      return failWith(
        data,
        error,
        "critic",
        "The critic could not review a step, and no answer is given unreviewed",
        events,
      );
    default:
      return internal(data, `no failure rule for ${key}`, events);
  }
}

function onTask(data: BlackboardData, input: TaskInput): Decided {
  const key = `${input.role}.${input.op}`;
  if (!EXPECTED[data.phase].includes(key)) return internal(data, `${input.kind} of ${key} in phase ${data.phase}`);
  const events: EventDraft[] = [];
  if (key === "executor.execute") return onExecution(data, input, events);
  if (input.kind === "result") return onResult(data, input, events);
  const { error } = input;
  if (error.retryable && input.attempt + 1 < AGENT_MAX_ATTEMPTS) {
    const rebuilt = agentTask(data, input.role, input.op, input.attempt + 1);
    if (!rebuilt) return internal(data, `cannot rebuild ${key}`);
    const again = { ...rebuilt, delayMs: retryBackoffMs(input.attempt + 1) };
    events.push(
      failed(
        again.stage,
        `failed (${error.code}: ${clip(error.message, 300)}); attempt ${input.attempt + 2} of ${AGENT_MAX_ATTEMPTS}`,
      ),
    );
    return dispatch(data, [again], events);
  }
  events.push(failed(AGENT_STAGE[key] ?? input.role, `failed (${error.code}: ${clip(error.message, 300)})`));
  return exhausted(data, key, error, events);
}

function onUserReply(data: BlackboardData, text: string): Decided {
  if (data.phase !== "awaiting_user") return internal(data, `a reply from a person in phase ${data.phase}`);
  const next = traced(
    { ...data, user_replies: append(data.user_replies, [text], CAPS.user_replies) },
    `The person answered: ${clip(text, 300)}`,
  );
  return toMemory(next, "remember_reply", [completed("awaiting_user", clip(text, 300))]);
}

function decide(data: BlackboardData, input: WorkflowInput): Decided {
  try {
    switch (input.kind) {
      case "start":
        if (data.phase !== "intake" || data.tools !== null || data.perception_snapshots.length > 0)
          return internal(data, "start after the run began");
        return dispatch(data, [perceiveQueryTask(data, 0), listToolsTask(0)], []);
      case "result":
      case "failure":
        return onTask(data, input);
      case "user_reply":
        return onUserReply(data, input.text);
    }
  } catch (e) {
    // Missing state is our bug; never guess past it.
    if (e instanceof AgentmeshError && e.code === "internal") return internal(data, e.message);
    throw e;
  }
}

/** A coordinator-centric loop over perception, memory, retriever, decision, executor and critic. */
export const blackboard: WorkflowDefinition<BlackboardData> = {
  name: "blackboard",
  version: 1,
  init: initialData,
  decide,
  abort: (data, error) => {
    const answer = clip(`${COULD_NOT_ANSWER} The session ended early (${error.code}): ${error.message}`, 20_000);
    const ended = traced(closePlan(data, "abandoned"), `Ended by the runtime: ${error.code}.`);
    const trace = reasoningTrace(ended);
    return {
      data: {
        ...ended,
        phase: "done",
        final_answer: answer,
        final_reasoning_trace: trace,
        error: error.message,
        error_component: error.component ?? data.phase,
      },
      final_answer: answer,
      final_reasoning_trace: trace,
    };
  },
};
