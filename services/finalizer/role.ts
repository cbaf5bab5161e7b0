import { defineAgent } from "@agentmesh/agent-kit";
import { LIMITS, type OpRequest, type OpResponse } from "@agentmesh/contracts";
import { clip, plural, quote } from "@agentmesh/offline-kit";

const NOT_ANSWERED = "The question could not be answered.";

/** Offline: the approved expert answer and a trace of the steps, or an honest report of the error. */
function finalizeOffline(input: OpRequest<"finalizer", "finalize">): OpResponse<"finalizer", "finalize"> {
  if (input.error !== null) {
    const component = input.error_component ?? "workflow";
    return {
      final_answer: clip(`${NOT_ANSWERED} The ${component} step failed: ${input.error}`, LIMITS.maxTextChars),
      final_reasoning_trace: clip(
        `The run stopped because the ${component} step failed (${input.error}). No answer was produced, so none is given.`,
        LIMITS.maxTextChars,
      ),
    };
  }
  const finalAnswer = input.expert_answer.trim() || NOT_ANSWERED;
  const research =
    input.research_results.length === 0
      ? "No research was needed."
      : `${plural(input.research_results.length, "research result")} were gathered.`;
  const tools = input.tool_calls.length ? [`Tools called: ${input.tool_calls.join("; ")}.`] : [];
  const trace = [
    `1. The planner planned how to answer ${quote(input.question)}.`,
    `2. ${research}`,
    `3. The expert answered: ${input.expert_reasoning.trim() || "(no reasoning given)"}`,
    "4. The final answer is the expert's answer.",
    ...tools,
  ].join("\n");
  return {
    final_answer: clip(finalAnswer, LIMITS.maxTextChars),
    final_reasoning_trace: clip(trace, LIMITS.maxTextChars),
  };
}

/** The finalizer: writes the final answer and the reasoning trace. */
export default defineAgent({
  role: "finalizer",
  description: "Generates the final answer and reasoning trace",
  ops: {
    finalize: {
      contract: "finalizer.finalize",
      render: (i) =>
        [
          `Question: ${i.question}`,
          `Instruction: ${i.message.content}`,
          `Expert answer: ${i.expert_answer || "(none)"}`,
          `Expert reasoning: ${i.expert_reasoning || "(none)"}`,
          i.research_results.length
            ? `Research results:\n${i.research_results.map((r, n) => `${n + 1}. ${r}`).join("\n")}`
            : "",
          i.tool_calls.length ? `Tool calls, oldest first:\n${i.tool_calls.map((t) => `- ${t}`).join("\n")}` : "",
          i.error ? `Error in ${i.error_component ?? "a component"}: ${i.error}` : "",
        ]
          .filter(Boolean)
          .join("\n\n"),
      summarize: (o) => o.final_answer.slice(0, 120),
      offline: finalizeOffline,
    },
  },
});
