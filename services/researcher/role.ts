import { defineAgent } from "@agentmesh/agent-kit";
import { LIMITS } from "@agentmesh/contracts";
import { clip, quote } from "@agentmesh/offline-kit";

/** The researcher: carries out one research step at a time (seed 004). */
export default defineAgent({
  role: "researcher",
  description: "Carries out one research step and reports the finding",
  ops: {
    research: {
      contract: "researcher.research",
      render: (i) =>
        [`Question: ${i.question}`, `Research step: ${i.research_step}`, `Instruction: ${i.message.content}`, i.feedback ? `Critic feedback: ${i.feedback}` : ""].filter(Boolean).join("\n\n"),
      summarize: (o) => o.result.slice(0, 120),
      // Offline there is no source to research: say so, never invent a finding.
      offline: (i, ctx) => ({
        result: clip(`No research source is available offline, so the step ${quote(i.research_step)} was not researched and nothing is reported as found. ${ctx.configHint}`, LIMITS.maxTextChars),
      }),
    },
  },
});
