import { defineAgent } from "@agentmesh/agent-kit";
import { CLARIFY_LIMITS, type AskRequest, type ChatMessage } from "@agentmesh/contracts";
import { clip, offlineClarification } from "@agentmesh/offline-kit";

const WHO: Readonly<Record<ChatMessage["role"], string>> = { user: "User", assistant: "Assistant", system: "System" };

/** One `User: …` / `Assistant: …` line per message, oldest first. */
const formatTurns = (messages: readonly ChatMessage[]): string =>
  messages.map((m) => `${WHO[m.role]}: ${clip(m.content.replace(/\s+/g, " ").trim(), 2000)}`).join("\n");

/** The user message: the conversation, the latest message last. */
export const renderAsk = (input: AskRequest): string =>
  `Conversation so far:\n${formatTurns(input.messages)}\n\nAsk your one question about the latest message.`;

/** The question as the person sees it: the model's text, trimmed, within the contract's bound. */
export const toQuestion = (text: string) => ({ question: clip(text.trim(), CLARIFY_LIMITS.maxQuestionChars) });

/** The clarifier role: clarify's clarification agent, one question per clarification. */
export default defineAgent({
  role: "clarifier",
  description:
    "clarify's clarification agent: asks the user one question that settles what the latest message leaves open",
  ops: {
    ask: {
      contract: "clarifier.ask",
      output: "text",
      render: renderAsk,
      toOutput: toQuestion,
      summarize: (o) => clip(o.question, 120),
      // offline: a templated question naming what offline-kit's rules found ambiguous
      offline: (input) => offlineClarification(input.messages),
    },
  },
});
