import { defineAgent } from "@agentmesh/agent-kit";
import type { OpRequest } from "@agentmesh/contracts";
import { decideOffline } from "./offline.js";

type PlanRequest = OpRequest<"decision", "plan">;

function renderTools(i: PlanRequest): string {
  const banned = new Set(i.memory.banned_tools.map((b) => b.tool));
  const usable = i.tools.filter((t) => !banned.has(t.name));
  if (usable.length === 0) return "Tools: none (plan only the summarize step, or say a model cannot help).";
  return `Tools you may use:\n${usable.map((t) => `- ${t.name}: ${t.description}\n  input schema: ${JSON.stringify(t.input_schema)}`).join("\n")}`;
}

function renderRewrite(i: PlanRequest): string {
  if (!i.previous_plan) return "";
  const steps = i.previous_plan.steps.map((s, n) => `${n + 1}. ${s.description} [${s.tool}]`).join("\n");
  return [
    `This is a REWRITE. The previous plan:\n${steps}`,
    i.failed_step_index === null ? "" : `Step ${i.failed_step_index + 1} went wrong.`,
    i.rewrite_suggestion ? `Advice (follow it): ${i.rewrite_suggestion}` : "",
    "Plan again from the step that went wrong; the steps before it were accepted.",
  ]
    .filter(Boolean)
    .join("\n");
}

/** The decision agent: a bounded plan of tool steps ending in summarize, or its rewrite. */
export default defineAgent({
  role: "decision",
  description:
    "Plans a bounded list of tool steps ending in summarize, and rewrites it after a failed or rejected step",
  ops: {
    plan: {
      contract: "decision.plan",
      render: (i) =>
        [
          `Question: ${i.question}`,
          `Perception: intent ${i.perception.intent}; entities ${i.perception.entities.map((e) => e.text).join(", ") || "none"}; constraints ${i.perception.constraints.join("; ") || "none"}; sub-goals ${i.perception.sub_goals.join("; ") || "none"}.`,
          i.retrieval
            ? `Retrieved context: ${i.retrieval.summary || "(no summary)"}${i.retrieval.open_questions.length ? `\nOpen questions: ${i.retrieval.open_questions.join("; ")}` : ""}`
            : "No retrieval was done.",
          i.memory.banned_tools.length
            ? `Banned tools (never use): ${i.memory.banned_tools.map((b) => `${b.tool} (${b.reason})`).join("; ")}`
            : "",
          i.memory.successful_tools.length
            ? `Tools that worked before: ${i.memory.successful_tools.map((t) => `${t.tool} ×${t.successes}`).join(", ")}`
            : "",
          i.memory.patterns.length
            ? `What the critic's reports showed so far:\n${i.memory.patterns.map((p) => `- ${p.kind}${p.tool ? ` ${p.tool}` : ""}: ${p.pattern} (×${p.seen})`).join("\n")}`
            : "",
          renderTools(i),
          `Strategy profile ${i.strategy_profile}: at most ${i.max_steps} steps in all, the last one the summarize step.`,
          renderRewrite(i),
        ]
          .filter(Boolean)
          .join("\n\n"),
      summarize: (o) => `${o.steps.length} step(s): ${o.steps.map((s) => s.tool).join(" → ")}`,
      offline: decideOffline,
    },
  },
});
