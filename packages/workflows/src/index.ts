export type {
  TaskSpec,
  Control,
  WorkflowInput,
  WorkflowDefinition,
  RuntimeDefaults,
  StepContext,
  StepOutcome,
  TimerEntry,
  SpanAttributes,
  DropReason,
  Aborted,
} from "./types.js";
export { createSession, effectiveBudgets, step, replay, type CreateSessionArgs } from "./runtime.js";
export { WORKFLOWS, getWorkflow } from "./registry.js";
export { COULD_NOT_ANSWER } from "./critic-chain-messages.js";
export { CRITIC_CHAIN_AGENT_TOOLS, CRITIC_CHAIN_TOOLS, MINIMAL_CRITIC_CHAIN_SETTINGS } from "./critic-chain-tools.js";
export { STRATEGY_PROFILES, COMPONENT_CEILINGS, effectiveLimits, type ProfileLimits } from "./blackboard-strategy.js";
export { NO_RETRIEVAL_INTENTS } from "./blackboard.js";
export { AGENT_MAX_ATTEMPTS, EXECUTOR_LIMITS, JOIN_DEADLINE_MS, MAX_HUMAN_QUESTIONS } from "./blackboard-tasks.js";
export { MINIMAL_HALO_SETTINGS, specialistTask } from "./halo.js";
export { DEFAULT_DOMAIN_HINTS } from "./halo-domain-hints.js";
export { MAX_REFUSALS } from "./supervisor.js";
export {
  AGENT_TOOLS,
  MINIMAL_SUPERVISOR_SETTINGS,
  NODE_OPS,
  offeredTools,
  ownTools,
  SUPERVISOR_TOOLS,
  type NodeOp,
} from "./supervisor-tools.js";
export { findDataInput } from "./supervisor-data-input.js";
export { CLARIFY_MAX_ATTEMPTS, DEFAULT_CLARIFY_SETTINGS, parseDecision } from "./clarify.js";
