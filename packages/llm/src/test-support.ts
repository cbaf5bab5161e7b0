// Fixtures shared by this package's tests (not shipped: no export names this file).
import { ROLES } from "@agentmesh/contracts";

/** A planner.plan request as an agent builds it, for the tests of the model adapters. */
export const planRequest = {
  role: "planner",
  op: "plan",
  taskId: "t1",
  system: "s",
  prompt: "p",
  input: {
    message: {
      sender: "orchestrator",
      receiver: "planner",
      type: "instruction",
      content: "Plan",
      step_id: null,
    } as const,
    question: "What is 2 + 2?",
    feedback: null,
  },
  schema: ROLES.planner.plan.response,
  schemaName: "plan",
};
