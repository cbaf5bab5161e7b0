import {
  CHAIN_MESSAGES,
  LIMITS,
  OPS,
  type AnyOp,
  type ChainMessage,
  type CriticChainData,
  type CriticChainStep,
  type OrchestratorMessage,
} from "@agentmesh/contracts";
import { loopOf, offeredTools, roundsLeft, type LoopStep } from "./critic-chain-tools.js";
import { task } from "./ops.js";
import type { TaskFields, TaskSpec } from "./types.js";

/** The verbatim final fields when the run ends without an answer (docs/workflows/critic-chain.md). */
export const COULD_NOT_ANSWER = "The question could not be answered.";

/** A step an agent runs: every step but the initial "input". */
export type AgentStep = Exclude<CriticChainStep, "input">;

/** Which role and op serve each step of the chain. */
export const STEP_OPS = {
  planner: OPS.planner.plan,
  critic_planner: OPS.critic.review_plan,
  researcher: OPS.researcher.research,
  critic_researcher: OPS.critic.review_research,
  expert: OPS.expert.answer,
  critic_expert: OPS.critic.review_answer,
  finalizer: OPS.finalizer.finalize,
} as const satisfies Record<AgentStep, AnyOp>;

/** Cuts text to `max` characters; long plans and answers must not overflow a bounded field. */
export const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** The state with one message of the chain's log added (its content cut to the bound, the latest kept). */
export function withMessage(d: CriticChainData, m: ChainMessage): CriticChainData {
  const message: ChainMessage = { ...m, content: clip(m.content, CHAIN_MESSAGES.contentChars) };
  return { ...d, messages: [...d.messages, message].slice(-CHAIN_MESSAGES.max) };
}

/** What a researcher or expert turn gets besides its task: its offered tools, its observations and the rounds left. */
function toolTurn(data: CriticChainData, step: LoopStep) {
  return {
    tools: offeredTools(data, step),
    observations: loopOf(data, step)?.observations ?? [],
    tool_rounds_left: roundsLeft(data, step),
  };
}

/** The researcher's (step by step) and the expert's tool calls as one line each, the latest 40, for the finalizer's trace. */
function toolCallLines(data: CriticChainData): string[] {
  const steps = Object.values(data.researcher_states).sort((a, b) => a.step_id - b.step_id);
  const turns = [
    ...steps.map((s) => ({ who: `researcher (step ${s.step_id + 1})`, observations: s.observations })),
    { who: "expert", observations: data.expert_state?.observations ?? [] },
  ];
  const lines = turns.flatMap(({ who, observations }) =>
    observations.map((o) =>
      clip(
        `${who}: ${o.tool} ${clip(JSON.stringify(o.arguments), 200)} ${o.ok ? "returned" : "failed"}: ${clip(o.content, 200)}`,
        500,
      ),
    ),
  );
  return lines.slice(-40);
}

/**
 * The orchestrator's message for `step`, built the same way every time.
 * `advance` moves the research index on for a new step; it is false when the same
 * step is re-dispatched after an agent failure, so the retry repeats the original message.
 * Returns the data too because advancing moves `current_research_index`.
 */
export function orchestratorMessage(
  data: CriticChainData,
  step: AgentStep,
  advance: boolean,
): { data: CriticChainData; message: OrchestratorMessage } {
  const msg = (content: string, step_id: number | null): OrchestratorMessage => ({
    sender: "orchestrator",
    receiver: step,
    type: "instruction",
    // Only a pathological plan or answer reaches the limit; the agent still gets every field by value.
    content: clip(content, LIMITS.maxTextChars),
    step_id,
  });
  switch (step) {
    case "planner":
      return {
        data,
        message:
          data.critic_planner_decision === "reject"
            ? msg(data.critic_planner_feedback ?? "", null)
            : msg(`Develop a logical plan to answer: ${data.question}`, null),
      };
    case "researcher": {
      if (data.critic_researcher_decision === "reject") {
        return { data, message: msg(data.critic_researcher_feedback ?? "", data.current_research_index) };
      }
      const index = advance ? data.current_research_index + 1 : data.current_research_index;
      const next = { ...data, current_research_index: index };
      const researchStep = data.research_steps[index];
      return researchStep !== undefined
        ? { data: next, message: msg(`Research: ${researchStep}`, index) }
        : { data: next, message: msg("All research steps completed.", index - 1) };
    }
    case "expert":
      return {
        data,
        message:
          data.critic_expert_decision === "reject"
            ? msg(data.critic_expert_feedback ?? "", null)
            : msg(`Perform steps: ${data.expert_steps.join(" ")}`, null),
      };
    case "critic_planner": {
      const logicalPlan = data.research_steps.join("\n") + "\n" + data.expert_steps.join("\n");
      return { data, message: msg(`Review plan: ${logicalPlan}`, null) };
    }
    case "critic_researcher": {
      const i = data.current_research_index;
      const researchResult = i < data.research_results.length ? (data.research_results[i] ?? "") : "";
      return { data, message: msg(`Review research: ${researchResult}`, i) };
    }
    case "critic_expert":
      return { data, message: msg(`Review expert answer: ${data.expert_answer}`, null) };
    case "finalizer":
      return { data, message: msg("Generate final answer and reasoning trace", null) };
  }
}

/**
 * The request of each step's op: the orchestrator's message plus everything the agent needs, by value. A
 * retry after a critic's reject also hands back what was rejected (the plan, the step's result,
 * the answer and its reasoning) beside the feedback; the researcher and the expert get their
 * tools, what the tools returned so far and the rounds left.
 */
export function stepTask(
  data: CriticChainData,
  step: AgentStep,
  message: OrchestratorMessage,
  fields: TaskFields,
): TaskSpec {
  const { question } = data;
  switch (step) {
    case "planner": {
      const rejected = data.critic_planner_decision === "reject";
      return task(
        STEP_OPS.planner,
        {
          message,
          question,
          feedback: rejected ? data.critic_planner_feedback : null,
          rejected_plan: rejected ? { research_steps: data.research_steps, expert_steps: data.expert_steps } : null,
        },
        fields,
      );
    }
    case "researcher":
    case "expert":
      return turnTask(data, step, message, fields);
    case "critic_planner":
    case "critic_researcher":
    case "critic_expert":
      return reviewTask(data, step, message, fields);
    case "finalizer":
      return task(
        STEP_OPS.finalizer,
        {
          message,
          question,
          expert_answer: data.expert_answer,
          expert_reasoning: data.expert_reasoning,
          research_results: data.research_results,
          error: data.error === null ? null : clip(data.error, 4000),
          error_component: data.error_component,
          tool_calls: toolCallLines(data),
        },
        fields,
      );
  }
}

/** A researcher's or an expert's turn: its work so far, what a reject handed back, and its tools. */
function turnTask(data: CriticChainData, step: LoopStep, message: OrchestratorMessage, fields: TaskFields): TaskSpec {
  const { question } = data;
  if (step === "researcher") {
    const rejected = data.critic_researcher_decision === "reject";
    return task(
      STEP_OPS.researcher,
      {
        message,
        question,
        research_step: data.research_steps[data.current_research_index] ?? "",
        feedback: rejected ? data.critic_researcher_feedback : null,
        rejected_result: rejected ? (data.research_results[data.current_research_index] ?? null) : null,
        ...toolTurn(data, "researcher"),
      },
      fields,
    );
  }
  const rejected = data.critic_expert_decision === "reject";
  return task(
    STEP_OPS.expert,
    {
      message,
      question,
      expert_steps: data.expert_steps,
      research_steps: data.research_steps,
      research_results: data.research_results,
      feedback: rejected ? data.critic_expert_feedback : null,
      rejected_answer: rejected ? { expert_answer: data.expert_answer, expert_reasoning: data.expert_reasoning } : null,
      ...toolTurn(data, "expert"),
    },
    fields,
  );
}

/** A critic's review of the plan, of the current research result, or of the expert's answer. */
function reviewTask(
  data: CriticChainData,
  step: "critic_planner" | "critic_researcher" | "critic_expert",
  message: OrchestratorMessage,
  fields: TaskFields,
): TaskSpec {
  const { question } = data;
  switch (step) {
    case "critic_planner":
      return task(
        STEP_OPS.critic_planner,
        { message, question, research_steps: data.research_steps, expert_steps: data.expert_steps },
        fields,
      );
    case "critic_researcher":
      return task(
        STEP_OPS.critic_researcher,
        {
          message,
          question,
          research_step: data.research_steps[data.current_research_index] ?? "",
          research_result: data.research_results[data.current_research_index] ?? "",
        },
        fields,
      );
    case "critic_expert":
      return task(
        STEP_OPS.critic_expert,
        { message, question, expert_answer: data.expert_answer, expert_reasoning: data.expert_reasoning },
        fields,
      );
  }
}
