import { defineAgent } from "@agentmesh/agent-kit";
import type { OpRequest, OpResponse } from "@agentmesh/contracts";
import { classifyQuestion, clip } from "@agentmesh/offline-kit";
import { capabilitiesOffline, planCapabilities, summarizeCapabilities } from "./capabilities.js";

/** Offline: one expert step that says what the offline engine can do with the question. */
function planOffline(input: OpRequest<"planner", "plan">): OpResponse<"planner", "plan"> {
  const q = classifyQuestion(input.question);
  const step = (() => {
    switch (q.kind) {
      case "arithmetic":
        return q.calc.ok
          ? `Evaluate the expression ${q.calc.expression} exactly with arbitrary-precision decimal arithmetic and state the exact value.`
          : `Explain why the expression ${q.calc.expression} cannot be evaluated: ${q.calc.reason}.`;
      case "greeting":
        return "Reply to the greeting and explain what can be answered without a language model.";
      case "vague":
        return "Ask the user to restate the query as one specific question; it is too vague to answer.";
      case "needs_model":
        return "Explain that answering this question needs a language model and how to configure one; do not guess an answer.";
    }
  })();
  return { research_steps: [], expert_steps: [clip(step, 2000)] };
}

const numbered = (steps: readonly string[]) =>
  steps.length ? steps.map((s, n) => `${n + 1}. ${s}`).join("\n") : "(none)";

/** The planner's user prompt: the question, the instruction and, on a retry, the plan the critic rejected with its feedback. */
export function renderPlan(i: OpRequest<"planner", "plan">): string {
  const rejected = i.rejected_plan;
  return [
    `Question: ${i.question}`,
    `Instruction: ${i.message.content}`,
    rejected
      ? `Your earlier plan, which the critic rejected:\nResearch steps:\n${numbered(rejected.research_steps)}\nExpert steps:\n${numbered(rejected.expert_steps)}`
      : "",
    i.feedback ? `Critic feedback to address: ${i.feedback}` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** The planner: turns a question into research steps and expert steps, or into halo's capability tags. */
export default defineAgent({
  role: "planner",
  description: "Develops a logical plan: research steps and expert steps, or the capability tags of halo's specialists",
  ops: {
    plan: {
      contract: "planner.plan",
      render: renderPlan,
      summarize: (o) => `${o.research_steps.length} research step(s), ${o.expert_steps.length} expert step(s)`,
      offline: planOffline,
    },
    capabilities: {
      kind: "handler",
      version: "planner.capabilities/1",
      contract: "planner.capabilities",
      run: planCapabilities,
      summarize: summarizeCapabilities,
      // the handler's one model call, answered offline
      offline: capabilitiesOffline,
    },
  },
});
