import { z } from "zod";

/** Workflows this runtime knows. Later issues add halo, supervisor and clarify. */
export const WorkflowName = z.enum(["critic-chain", "blackboard"]);
export type WorkflowName = z.infer<typeof WorkflowName>;
export const DEFAULT_WORKFLOW: WorkflowName = "critic-chain";
