import { defineAgent } from "@agentmesh/agent-kit";
import { answerOffline, renderAnswer, summarizeAnswer } from "./answer.js";

/** The expert: answers the question from the plan's expert steps and all research results, with its tools. */
export default defineAgent({
  role: "expert",
  description: "Answers the question using every research result and the expert steps, computing with its tools",
  ops: {
    answer: {
      contract: "expert.answer",
      render: renderAnswer,
      summarize: summarizeAnswer,
      offline: answerOffline,
    },
  },
});
