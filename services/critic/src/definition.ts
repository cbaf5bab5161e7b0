import { defineAgent } from "@agentmesh/agent-kit";

const RULES = [
  "Decide approve or reject and give feedback.",
  "Reject only when the work is incomplete, unclear, irrelevant or wrong; feedback on a rejection must say concretely what to change.",
  "Apply the same standard to similar work. On approval, feedback may be a short confirmation.",
].join("\n");

/** The critic: reviews the plan, each research result and the expert's answer (seed 004). */
export const critic = defineAgent({
  role: "critic",
  description: "Reviews plans, research results and answers: approve or reject with feedback",
  ops: {
    review_plan: {
      promptVersion: "critic.review_plan/1",
      system: `You review a plan for answering a question. Approve when it has sufficient, specific research and expert steps.\n${RULES}`,
      render: (i) => `Question: ${i.question}\n\n${i.message.content}`,
      summarize: (o) => `${o.decision}: ${o.feedback.slice(0, 120)}`,
    },
    review_research: {
      promptVersion: "critic.review_research/1",
      system: `You review one research result. Approve when it is relevant, accurate and complete for its research step.\n${RULES}`,
      render: (i) => `Question: ${i.question}\nResearch step: ${i.research_step}\n\n${i.message.content}`,
      summarize: (o) => `${o.decision}: ${o.feedback.slice(0, 120)}`,
    },
    report: {
      promptVersion: "critic.report/1",
      system: [
        "You review one step of a plan that a tool executed, for quality, safety and correctness.",
        "Score quality from 0 to 1 and hallucination_risk from 0 to 1 (high when the result states things the retrieval and tool outputs do not support).",
        "List concrete issues (at most 20). Set is_acceptable when quality is at least 0.6 and hallucination risk at most 0.5.",
        "Give a rewrite_suggestion only when the plan chose the wrong tool or step; otherwise null.",
        "Set requires_human_input with question_for_human only for real ambiguity a person must resolve (missing units, format, intent).",
      ].join("\n"),
      render: (i) =>
        [
          `Question: ${i.question}`,
          `Step ${i.step_index + 1}${i.is_final_step ? " (final: its output is the answer)" : ""}: ${i.step.description} [tool ${i.step.tool}]`,
          i.result.ok ? `Result (${i.result.strategy} via ${i.result.tool}): ${i.result.output ?? ""}` : `The step failed: ${i.result.error?.code ?? "error"}: ${i.result.error?.message ?? ""}`,
          i.retrieval ? `Retrieved context: ${i.retrieval.summary ?? ""}` : "",
          i.perception ? `Perceived intent: ${i.perception.intent}` : "",
        ].filter(Boolean).join("\n\n"),
      summarize: (o) => `quality ${o.quality.toFixed(2)}, risk ${o.hallucination_risk.toFixed(2)}, ${o.is_acceptable ? "acceptable" : "not acceptable"}`,
    },
    review_answer: {
      promptVersion: "critic.review_answer/1",
      system: `You review an expert's answer. Approve when it directly addresses the question with proper reasoning.\n${RULES}`,
      render: (i) => `Question: ${i.question}\n\n${i.message.content}\n\nExpert reasoning: ${i.expert_reasoning}`,
      summarize: (o) => `${o.decision}: ${o.feedback.slice(0, 120)}`,
    },
  },
});
