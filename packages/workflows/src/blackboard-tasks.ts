import {
  AgentmeshError,
  BLACKBOARD_LIMITS,
  SUMMARIZE_TOOL,
  type BlackboardData,
  type ExecutionStrategy,
  type ExecutorLimits,
  type MemoryEvent,
  OPS,
  type Op,
  type OpInput,
  type OpName,
  type OpRequest,
  type RoleName,
  type PlanStep,
  type RetrievalSource,
} from "@agentmesh/contracts";
import { CAPS, currentStep, deriveQuery, latestRetrieval, querySnapshot } from "./blackboard-data.js";
import { retrievalSources } from "./blackboard-strategy.js";
import { clip } from "./critic-chain-messages.js";
import { task } from "./ops.js";
import type { TaskFields, TaskOf, TaskSpec } from "./types.js";

/** Attempts of one agent task (perception, memory, retriever, decision, critic) before its failure counts. */
export const AGENT_MAX_ATTEMPTS = 3;
/** Questions the critic may put to a person in one session; later requests for input are noted, not asked. */
export const MAX_HUMAN_QUESTIONS = 3;
/** What the executor applies to one tool call: 3 attempts of at most 5 s. */
export const EXECUTOR_LIMITS: ExecutorLimits = {
  max_attempts: BLACKBOARD_LIMITS.maxToolAttempts,
  timeout_ms: BLACKBOARD_LIMITS.maxToolTimeoutMs,
};
/**
 * Deadline of one strategy task, and so the join deadline of a parallel round: every attempt at
 * its timeout plus room for backoff and transport. The summarize step may call a model, so it
 * keeps the runtime's task deadline instead.
 */
export const JOIN_DEADLINE_MS = EXECUTOR_LIMITS.max_attempts * EXECUTOR_LIMITS.timeout_ms + 5000;

/** The registry tool each strategy runs. */
export const STRATEGY_TOOL = { rag: "corpus_search", web: "web_search" } as const;

/** A bug of ours: the data lacks what the phase needs, or an output the runtime validated does not parse. */
export const blackboardFault = (message: string): AgentmeshError => new AgentmeshError("internal", message);

function need<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw blackboardFault(`no ${what} on the blackboard`);
  return value;
}

/** The stage each agent op runs as; its failure is reported under the same name. */
export const AGENT_STAGE: Readonly<Record<string, string>> = {
  "perception.perceive": "perception",
  "executor.list_tools": "tools",
  "memory.update": "memory",
  "retriever.retrieve": "retriever",
  "decision.plan": "decision",
  "executor.execute": "executor",
  "critic.report": "critic",
};

function spec<R extends RoleName, O extends OpName<R>>(
  op: Op<R, O>,
  input: OpInput<R, O>,
  attempt: number,
  description: string,
  extra: Partial<TaskFields> = {},
): TaskOf<R, O> {
  return task(op, input, {
    attempt,
    stage: AGENT_STAGE[`${op.role}.${op.op}`] ?? op.role,
    description: attempt === 0 ? description : `attempt ${attempt}: ${description}`,
    ...extra,
  });
}

const stepLabel = (index: number, step: PlanStep) => `step ${index + 1} (${step.tool}): ${clip(step.description, 120)}`;

export function perceiveQueryTask(data: BlackboardData, attempt: number): TaskSpec {
  const input: OpRequest<"perception", "perceive"> = { kind: "query", query: data.question };
  return spec(OPS.perception.perceive, input, attempt, "Analyse the question");
}

export function listToolsTask(attempt: number): TaskSpec {
  const input: OpRequest<"executor", "list_tools"> = { max_tools: BLACKBOARD_LIMITS.maxTools };
  return spec(OPS.executor.list_tools, input, attempt, "List the tools the executor can run");
}

/** What the memory agent folds in, by phase: the query's perception, the step's outcome, or a person's reply. */
function memoryEvent(data: BlackboardData): MemoryEvent {
  switch (data.phase) {
    case "remember_query":
      return { kind: "perception", snapshot: need(querySnapshot(data), "perception of the query") };
    case "remember_step": {
      const at = need(currentStep(data), "current step");
      const result = need(data.step_outcome, "step outcome");
      // Only a successful result reaches the critic, so only then is the last report this step's.
      const critic = result.ok ? (data.critic_reports.at(-1)?.report ?? null) : null;
      return { kind: "step", step_index: at.index, step: at.step, result, critic };
    }
    case "remember_reply":
      return {
        kind: "user_reply",
        question_for_human: need(data.question_for_human, "question for the person"),
        text: need(data.user_replies.at(-1), "reply"),
      };
    case "intake":
    case "retrieve":
    case "plan":
    case "execute":
    case "perceive_result":
    case "critique":
    case "awaiting_user":
    case "done":
      throw blackboardFault(`no memory update in phase ${data.phase}`);
  }
}

export function memoryTask(data: BlackboardData, attempt: number): TaskSpec {
  const event = memoryEvent(data);
  const input: OpRequest<"memory", "update"> = { question: data.question, memory: data.memory, event };
  return spec(OPS.memory.update, input, attempt, `Update memory with the ${event.kind.replace("_", " ")}`);
}

/** What the retriever searches with: a query derived from the question, and the profile's sources. */
export function retrievalQuery(data: BlackboardData): { query: string; strategies: RetrievalSource[] } {
  return {
    query: deriveQuery(data.question, BLACKBOARD_LIMITS.retrieverQueryMaxChars),
    strategies: retrievalSources(data.strategy_profile),
  };
}

export function retrieveTask(data: BlackboardData, attempt: number): TaskSpec {
  const input: OpRequest<"retriever", "retrieve"> = {
    ...retrievalQuery(data),
    memory: data.memory,
    max_items: BLACKBOARD_LIMITS.maxRetrievedItems,
  };
  return spec(OPS.retriever.retrieve, input, attempt, `Retrieve context (${input.strategies.join(", ")})`);
}

export function planTask(data: BlackboardData, attempt: number): TaskSpec {
  const rewrite = data.rewrite_request;
  const previous = rewrite ? data.plan_versions.at(-1) : undefined;
  const input: OpRequest<"decision", "plan"> = {
    question: data.question,
    perception: need(querySnapshot(data), "perception of the query"),
    retrieval: latestRetrieval(data),
    memory: data.memory,
    tools: data.tools ?? [],
    max_steps: data.limits.max_steps,
    strategy_profile: data.strategy_profile,
    previous_plan: previous ? { steps: previous.steps, rationale: previous.rationale } : null,
    failed_step_index: rewrite ? rewrite.failed_step_index : null,
    rewrite_suggestion: rewrite ? rewrite.suggestion : null,
  };
  const detail = rewrite
    ? `Rewrite the plan (${data.rewrite_count}/${data.limits.max_rewrites}) after step ${rewrite.failed_step_index + 1}`
    : `Plan at most ${data.limits.max_steps} steps`;
  return spec(OPS.decision.plan, input, attempt, detail);
}

/** One strategy of the current step. Its tag names the strategy; the attempt is the step's retry count. */
export function executeTask(data: BlackboardData, strategy: ExecutionStrategy): TaskSpec {
  const at = need(currentStep(data), "current step");
  const summarize = at.step.tool === SUMMARIZE_TOOL;
  const input: OpRequest<"executor", "execute"> = {
    question: data.question,
    step_index: at.index,
    step: at.step,
    strategy,
    query: strategy === "tool" ? null : deriveQuery(at.step.description, BLACKBOARD_LIMITS.retrieverQueryMaxChars),
    limits: EXECUTOR_LIMITS,
    // enforced by the executor: the planner's choice is only good among what it was shown
    policy: { listed: (data.tools ?? []).map((t) => t.name), banned: data.memory.banned_tools.map((b) => b.tool) },
    context: summarize
      ? {
          results: data.accepted_results.slice(-(BLACKBOARD_LIMITS.maxPlanSteps - 1)),
          retrieval: latestRetrieval(data),
          user_replies: data.user_replies.slice(-CAPS.user_replies),
        }
      : null,
  };
  const tool = strategy === "tool" ? at.step.tool : STRATEGY_TOOL[strategy];
  // The arguments as the executor reads them: the step's own (a null value is "not given"), or the strategy's query.
  const args =
    input.query === null
      ? Object.fromEntries(at.step.args.filter((a) => a.value !== null).map((a) => [a.name, a.value]))
      : { query: input.query };
  return spec(
    OPS.executor.execute,
    input,
    data.step_retries,
    `${stepLabel(at.index, at.step)} via ${tool} (${strategy})`,
    {
      tag: strategy,
      toolCall: { id: toolCallId(data, strategy), tool, args },
      ...(summarize ? {} : { deadlineMs: JOIN_DEADLINE_MS }),
    },
  );
}

/**
 * The id of the tool call one strategy of the current step makes: plan version, step, run of the
 * step and strategy, so it is unique in the session and known again when the result comes back.
 */
export function toolCallId(data: BlackboardData, strategy: ExecutionStrategy): string {
  const at = need(currentStep(data), "current step");
  return `p${at.plan.version}.s${at.index}.r${data.step_retries}.${strategy}`;
}

export function perceiveResultTask(data: BlackboardData, attempt: number): TaskSpec {
  const at = need(currentStep(data), "current step");
  const input: OpRequest<"perception", "perceive"> = {
    kind: "step_result",
    query: data.question,
    step_index: at.index,
    step: at.step,
    result: need(data.step_outcome, "step outcome"),
  };
  return spec(OPS.perception.perceive, input, attempt, `Analyse the result of ${stepLabel(at.index, at.step)}`);
}

export function critiqueTask(data: BlackboardData, attempt: number): TaskSpec {
  const at = need(currentStep(data), "current step");
  const input: OpRequest<"critic", "report"> = {
    question: data.question,
    step_index: at.index,
    step: at.step,
    is_final_step: at.last,
    result: need(data.step_outcome, "step outcome"),
    perception: data.step_perception,
    retrieval: latestRetrieval(data),
  };
  return spec(OPS.critic.report, input, attempt, `Review ${stepLabel(at.index, at.step)}`);
}

/** The task of an agent op in the current phase, rebuilt from the data (for a retry of a failed attempt). */
export function agentTask(data: BlackboardData, role: string, op: string, attempt: number): TaskSpec | null {
  switch (`${role}.${op}`) {
    case "perception.perceive":
      return data.phase === "intake" ? perceiveQueryTask(data, attempt) : perceiveResultTask(data, attempt);
    case "executor.list_tools":
      return listToolsTask(attempt);
    case "memory.update":
      return memoryTask(data, attempt);
    case "retriever.retrieve":
      return retrieveTask(data, attempt);
    case "decision.plan":
      return planTask(data, attempt);
    case "critic.report":
      return critiqueTask(data, attempt);
    default:
      return null;
  }
}
