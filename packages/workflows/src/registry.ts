import type { SessionData, WorkflowName } from "@agentmesh/contracts";
import { blackboard } from "./blackboard.js";
import { clarify } from "./clarify.js";
import { criticChain } from "./critic-chain.js";
import { halo } from "./halo.js";
import { supervisor } from "./supervisor.js";
import type { WorkflowDefinition } from "./types.js";

/** Every workflow this runtime can run, by name; each entry is typed against its own data. */
export const WORKFLOWS = {
  "critic-chain": criticChain,
  blackboard,
  halo,
  supervisor,
  clarify,
} as const satisfies { readonly [K in WorkflowName]: WorkflowDefinition<Extract<SessionData, { workflow: K }>> };

/**
 * Every definition widened to the whole data union: sound because the runtime hands a definition
 * only data whose `workflow` is its own name.
 */
const BY_NAME: ReadonlyMap<string, WorkflowDefinition> = new Map<string, WorkflowDefinition>(
  Object.values(WORKFLOWS).map((w: WorkflowDefinition) => [w.name, w]),
);

/** The definition of a workflow, or null when unknown. */
export function getWorkflow(name: string): WorkflowDefinition | null {
  return BY_NAME.get(name) ?? null;
}
