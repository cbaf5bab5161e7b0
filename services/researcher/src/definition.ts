import { defineAgent } from "@agentmesh/agent-kit";

/** The researcher: carries out one research step at a time (seed 004). */
export const researcher = defineAgent({
  role: "researcher",
  description: "Carries out one research step and reports the finding",
  ops: {
    research: {
      promptVersion: "researcher.research/1",
      system: [
        "You are a researcher. Carry out the research step you are given for the user's question and report what you found as `result`.",
        "State facts you are confident of; say plainly what you could not establish. Never invent sources.",
        "When feedback from a critic is given, redo the step addressing it.",
      ].join("\n"),
      render: (i) =>
        [`Question: ${i.question}`, `Research step: ${i.research_step}`, `Instruction: ${i.message.content}`, i.feedback ? `Critic feedback: ${i.feedback}` : ""].filter(Boolean).join("\n\n"),
      summarize: (o) => o.result.slice(0, 120),
    },
  },
});
