import { defineAgent } from "@agentmesh/agent-kit";

/** The expert: answers the question from the plan's expert steps and all research results (seed 004). */
export const expert = defineAgent({
  role: "expert",
  description: "Answers the question using every research result and the expert steps",
  ops: {
    answer: {
      promptVersion: "expert.answer/1",
      system: [
        "You are the expert. Perform the expert steps using all available research results and answer the user's question directly.",
        "Return expert_answer (the answer itself) and expert_reasoning (how the steps and research lead to it). Compute exactly; do not guess numbers.",
        "When feedback from a critic is given, revise the answer to address it.",
      ].join("\n"),
      render: (i) =>
        [
          `Question: ${i.question}`,
          `Instruction: ${i.message.content}`,
          i.research_results.length ? `Research results:\n${i.research_results.map((r, n) => `${n + 1}. ${i.research_steps[n] ?? "research"}: ${r}`).join("\n")}` : "No research results.",
          i.feedback ? `Critic feedback: ${i.feedback}` : "",
        ].filter(Boolean).join("\n\n"),
      summarize: (o) => o.expert_answer.slice(0, 120),
    },
  },
});
