import { defineAgent } from "@agentmesh/agent-kit";

/** The planner: turns a question into research steps and expert steps (seed 004). */
export const planner = defineAgent({
  role: "planner",
  description: "Develops a logical plan: research steps and expert steps",
  ops: {
    plan: {
      promptVersion: "planner.plan/1",
      system: [
        "You are the planner of a multi-agent system. Develop a logical plan to answer the user's question.",
        "Return research_steps: specific, actionable research tasks that gather information the answer needs (empty when the question needs no outside information).",
        "Return expert_steps: logical reasoning or calculation steps that turn the research into the answer (at least one).",
        "Keep each step one sentence. When feedback from a critic is given, revise the plan to address it.",
      ].join("\n"),
      render: (i) =>
        [`Question: ${i.question}`, `Instruction: ${i.message.content}`, i.feedback ? `Critic feedback to address: ${i.feedback}` : ""].filter(Boolean).join("\n\n"),
      summarize: (o) => `${o.research_steps.length} research step(s), ${o.expert_steps.length} expert step(s)`,
    },
  },
});
