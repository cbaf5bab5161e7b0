import {
  HANDOFF_MATRIX,
  MAX_HANDOFFS,
  handoffToolName,
  type HandoffArgs,
  type HandoffInfo,
  type HandoffToolName,
  type SupervisorAgent,
} from "@agentmesh/contracts";

export { handoffTarget, handoffToolName, type HandoffToolName } from "@agentmesh/contracts";

/** The handoff tools `agent` gets: one per target the matrix allows it, in the matrix's order. */
export const handoffToolsFor = (agent: SupervisorAgent): HandoffToolName[] =>
  HANDOFF_MATRIX[agent].map(handoffToolName);

/** Why a handoff was refused; the agent is told and goes on with the task itself. */
export type HandoffRefusal = "self" | "not_in_matrix" | "ping_pong";

/**
 * What becomes of a requested handoff: `accepted`, with the HandoffInfo to record; `refused`, with
 * the message the agent gets as the tool's result (it goes on); or `cap_reached`: MAX_HANDOFFS were
 * already made, so the chain ends and the current agent's answer is the final answer.
 */
export type HandoffDecision =
  | { readonly outcome: "accepted"; readonly handoff: HandoffInfo }
  | { readonly outcome: "refused"; readonly reason: HandoffRefusal; readonly message: string }
  | { readonly outcome: "cap_reached"; readonly message: string };

/** A handoff an agent asked for by calling `handoff_to_<target>`. */
export interface HandoffRequest {
  /** The agent that holds the task now. */
  readonly current: SupervisorAgent;
  readonly target: SupervisorAgent;
  /** The tool's arguments, validated where the model's tool call came in. */
  readonly args: HandoffArgs;
  /** The session's handoffs so far, oldest first. */
  readonly history: readonly HandoffInfo[];
}

const allowedFrom = (agent: SupervisorAgent): string => {
  const targets = HANDOFF_MATRIX[agent];
  return targets.length > 0
    ? `the ${agent} agent may hand off only to ${targets.join(", ")}`
    : `the ${agent} agent may not hand off`;
};

/**
 * Decides a requested handoff, in this order: at the cap (3 made) the chain
 * ends; a handoff to the agent itself, one outside the matrix, or one straight back to the agent
 * that handed the task to the current one (A→B→A) is refused; anything else is accepted.
 */
export function decideHandoff({ current, target, args, history }: HandoffRequest): HandoffDecision {
  if (history.length >= MAX_HANDOFFS) {
    return {
      outcome: "cap_reached",
      message: `This session has made its ${MAX_HANDOFFS} handoffs; the ${current} agent's answer is the final answer.`,
    };
  }
  if (target === current) {
    return {
      outcome: "refused",
      reason: "self",
      message: `You are the ${current} agent; handing off to yourself does nothing. Carry on with the task yourself.`,
    };
  }
  if (!HANDOFF_MATRIX[current].includes(target)) {
    return {
      outcome: "refused",
      reason: "not_in_matrix",
      message: `You cannot hand off to the ${target} agent: ${allowedFrom(current)}. Carry on with the task yourself.`,
    };
  }
  const last = history.at(-1);
  if (last !== undefined && last.target_agent === current && last.source_agent === target) {
    return {
      outcome: "refused",
      reason: "ping_pong",
      message: `You cannot hand the task back to the ${target} agent: it just handed it to you. Finish it yourself.`,
    };
  }
  const context = args.context?.trim();
  return {
    outcome: "accepted",
    handoff: {
      source_agent: current,
      target_agent: target,
      task_description: args.task_description.trim(),
      context: context ? context : null,
    },
  };
}
