import { defineAgent } from "@agentmesh/agent-kit";

/** The finalizer: writes the final answer and the reasoning trace (seed 004). */
export const finalizer = defineAgent({
  role: "finalizer",
  description: "Generates the final answer and reasoning trace",
  ops: {
    finalize: {
      promptVersion: "finalizer.finalize/1",
      system: [
        "You write the final answer for the user and a reasoning trace of how the system reached it.",
        "final_answer: the approved expert answer, stated clearly. final_reasoning_trace: the research and reasoning steps taken, briefly.",
        "If an error is reported, tell the user plainly what could not be done; never invent an answer.",
      ].join("\n"),
      render: (i) =>
        [
          `Question: ${i.question}`,
          `Instruction: ${i.message.content}`,
          `Expert answer: ${i.expert_answer || "(none)"}`,
          `Expert reasoning: ${i.expert_reasoning || "(none)"}`,
          i.research_results.length ? `Research results:\n${i.research_results.map((r, n) => `${n + 1}. ${r}`).join("\n")}` : "",
          i.error ? `Error in ${i.error_component ?? "a component"}: ${i.error}` : "",
        ].filter(Boolean).join("\n\n"),
      summarize: (o) => o.final_answer.slice(0, 120),
    },
  },
});
