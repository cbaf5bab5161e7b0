import { defineAgent } from "@agentmesh/agent-kit";
import { CLARIFY_LIMITS, type ChatMessage, type DecideRequest } from "@agentmesh/contracts";
import { clip, offlineDecision } from "@agentmesh/offline-kit";

/** The orchestrator's prompt name in Langfuse (`prompt: "agent_orchestrator"`). */
export const ORCHESTRATOR_PROMPT = "agent_orchestrator";
/** The routing temperature: low, for consistent decisions. */
export const ORCHESTRATOR_TEMPERATURE = 0.3;

const SPEAKER: Readonly<Record<ChatMessage["role"], string>> = { user: "User", assistant: "AI", system: "System" };

/** The conversation as the prompt shows it: one `User: …` / `AI: …` line per message, oldest first. */
export function formatHistory(messages: readonly ChatMessage[]): string {
  return messages.map((m) => `${SPEAKER[m.role]}: ${clip(m.content.replace(/\s+/g, " ").trim(), 2000)}`).join("\n");
}

/** The prompt variables; the workflow already cut the history to its last `max_history` messages. */
export const orchestratorVariables = (input: DecideRequest) => ({
  conversation_history: formatHistory(input.messages),
  clarification_count: input.clarification_count,
  max_clarifications: input.max_clarifications,
});

/** The user message: the decision asked for, in the two-line format (the history is in the instructions). */
export const renderDecide = (input: DecideRequest): string =>
  `Decide for the latest message (${input.messages.length} message(s) shown). Reply with the two lines "Decision: CLARIFICATION" or "Decision: RESEARCH", then "Reasoning: …".`;

/** The orchestrator role: clarify's Layer 3, one free-text model call whose reply the workflow parses (docs/workflows/clarify.md). */
export default defineAgent({
  role: "orchestrator",
  description:
    "clarify's orchestrator (Layer 3): reads the latest messages and the clarification count, answers CLARIFICATION or RESEARCH with a reason",
  ops: {
    decide: {
      contract: "orchestrator.decide",
      promptName: ORCHESTRATOR_PROMPT,
      output: "text",
      temperature: ORCHESTRATOR_TEMPERATURE,
      variables: orchestratorVariables,
      render: renderDecide,
      toOutput: (text) => ({ decision: clip(text.trim(), CLARIFY_LIMITS.maxDecisionChars) }),
      summarize: (o) => clip(o.decision.replace(/\s+/g, " "), 120),
      // the `orchestrator_decision` record on the task's span (the workflow adds next_agent and iteration to its transition's)
      spanAttributes: (input, output, made) => ({
        "orchestrator_decision.input.conversation_history": clip(formatHistory(input.messages), 4000),
        "orchestrator_decision.input.clarification_count": input.clarification_count,
        "orchestrator_decision.output": output.decision,
        "orchestrator_decision.model": made.model,
        "orchestrator_decision.prompt_name": made.promptName,
        "orchestrator_decision.prompt_version": made.promptVersion,
        "orchestrator_decision.metadata.agent": "orchestrator",
      }),
      // offline: offline-kit's keyword rules (a bare pronoun, an unnamed paper, "best" without a measure, …)
      offline: (input) => offlineDecision(input.messages),
    },
  },
});
