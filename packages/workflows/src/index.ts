export type { TaskSpec, Control, WorkflowInput, WorkflowDefinition, RuntimeDefaults, StepContext, StepOutcome } from "./types.js";
