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
    review_answer: {
      promptVersion: "critic.review_answer/1",
      system: `You review an expert's answer. Approve when it directly addresses the question with proper reasoning.\n${RULES}`,
      render: (i) => `Question: ${i.question}\n\n${i.message.content}\n\nExpert reasoning: ${i.expert_reasoning}`,
      summarize: (o) => `${o.decision}: ${o.feedback.slice(0, 120)}`,
    },
  },
});
