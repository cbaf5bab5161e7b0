export type {
  TaskSpec,
  Control,
  WorkflowInput,
  WorkflowDefinition,
  RuntimeDefaults,
  StepContext,
  StepOutcome,
  TimerEntry,
  DropReason,
  Aborted,
} from "./types.js";
export { createSession, step, replay, type CreateSessionArgs } from "./runtime.js";
export { WORKFLOWS, getWorkflow } from "./registry.js";
export { timerMember, parseTimerMember, type TimerTarget } from "./timers.js";
export { COULD_NOT_ANSWER } from "./critic-chain-messages.js";
