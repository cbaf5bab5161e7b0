import { defineAgent } from "@agentmesh/agent-kit";
import { perceiveOffline } from "./offline.js";

/** The perception agent: reads the question, and later each step result, into a PerceptionSnapshot. */
export default defineAgent({
  role: "perception",
  description:
    "Extracts entities, intent, constraints and sub-goals from the question or a step result; flags suspicious patterns",
  ops: {
    perceive: {
      contract: "perception.perceive",
      render: (i) => {
        if (i.kind === "query") return `Analyse this question.\n\nQuestion: ${i.query}`;
        const r = i.result;
        return [
          "Analyse this step result against the question and the step's goal. Set goal_satisfied.",
          `Question: ${i.query}`,
          `Step ${i.step_index + 1}: ${i.step.description} [tool ${i.step.tool}]`,
          `Expected outcome: ${i.step.expected_outcome || "(not stated)"}`,
          r.ok
            ? `Result (${r.strategy} via ${r.tool}):\n${r.output ?? ""}`
            : `The step failed: ${r.error?.code ?? "error"}: ${r.error?.message ?? ""}`,
        ].join("\n\n");
      },
      summarize: (o) =>
        `intent ${o.intent}, ${o.entities.length} entities, ${o.sub_goals.length} sub-goals${o.goal_satisfied === null ? "" : `, goal ${o.goal_satisfied ? "satisfied" : "not satisfied"}`}${o.suspicious_patterns.length ? `, flagged ${o.suspicious_patterns.join("/")}` : ""}`,
      offline: perceiveOffline,
    },
  },
});
