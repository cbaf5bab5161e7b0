import {
  CHAIN_MESSAGES,
  LIMITS,
  type ChainMessage,
  type CriticChainData,
  type CriticChainStep,
  type OpRequest,
  type OrchestratorMessage,
  type RoleName,
} from "@agentmesh/contracts";
import { loopOf, offeredTools, roundsLeft, type LoopStep } from "./critic-chain-tools.js";

/** The verbatim final fields when the run ends without an answer (docs/workflows/critic-chain.md). */
export const COULD_NOT_ANSWER = "The question could not be answered.";

/** A step an agent runs: every step but the initial "input". */
export type AgentStep = Exclude<CriticChainStep, "input">;

/** Which role and op serve each step of the chain. */
export const STEP_OPS = {
  planner: { role: "planner", op: "plan" },
  critic_planner: { role: "critic", op: "review_plan" },
  researcher: { role: "researcher", op: "research" },
  critic_researcher: { role: "critic", op: "review_research" },
  expert: { role: "expert", op: "answer" },
  critic_expert: { role: "critic", op: "review_answer" },
  finalizer: { role: "finalizer", op: "finalize" },
} as const satisfies Record<AgentStep, { role: RoleName; op: string }>;

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
export function taskInput(data: CriticChainData, step: AgentStep, message: OrchestratorMessage): unknown {
  const { question } = data;
  const researchStep = data.research_steps[data.current_research_index] ?? "";
  switch (step) {
    case "planner":
      return {
        message,
        question,
        feedback: data.critic_planner_decision === "reject" ? data.critic_planner_feedback : null,
        rejected_plan:
          data.critic_planner_decision === "reject"
            ? { research_steps: data.research_steps, expert_steps: data.expert_steps }
            : null,
      } satisfies OpRequest<"planner", "plan">;
    case "critic_planner":
      return {
        message,
        question,
        research_steps: data.research_steps,
        expert_steps: data.expert_steps,
      } satisfies OpRequest<"critic", "review_plan">;
    case "researcher":
      return {
        message,
        question,
        research_step: researchStep,
        feedback: data.critic_researcher_decision === "reject" ? data.critic_researcher_feedback : null,
        rejected_result:
          data.critic_researcher_decision === "reject"
            ? (data.research_results[data.current_research_index] ?? null)
            : null,
        ...toolTurn(data, "researcher"),
      } satisfies OpRequest<"researcher", "research">;
    case "critic_researcher":
      return {
        message,
        question,
        research_step: researchStep,
        research_result: data.research_results[data.current_research_index] ?? "",
      } satisfies OpRequest<"critic", "review_research">;
    case "expert":
      return {
        message,
        question,
        expert_steps: data.expert_steps,
        research_steps: data.research_steps,
        research_results: data.research_results,
        feedback: data.critic_expert_decision === "reject" ? data.critic_expert_feedback : null,
        rejected_answer:
          data.critic_expert_decision === "reject"
            ? { expert_answer: data.expert_answer, expert_reasoning: data.expert_reasoning }
            : null,
        ...toolTurn(data, "expert"),
      } satisfies OpRequest<"expert", "answer">;
    case "critic_expert":
      return {
        message,
        question,
        expert_answer: data.expert_answer,
        expert_reasoning: data.expert_reasoning,
      } satisfies OpRequest<"critic", "review_answer">;
    case "finalizer":
      return {
        message,
        question,
        expert_answer: data.expert_answer,
        expert_reasoning: data.expert_reasoning,
        research_results: data.research_results,
        error: data.error === null ? null : clip(data.error, 4000),
        error_component: data.error_component,
        tool_calls: toolCallLines(data),
      } satisfies OpRequest<"finalizer", "finalize">;
  }
}
