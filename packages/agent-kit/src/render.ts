import type { ChatMessage } from "@agentmesh/contracts";

/** Options of `renderConversation`. */
export interface ConversationView {
  /** Only the latest this many turns (default: all). */
  readonly lastTurns?: number;
  /** Each turn's text cut to this many characters (default: whole). */
  readonly maxTurnChars?: number;
}

/**
 * Earlier turns as prompt text, one `role: text` block per turn, oldest first; "(none)" for no
 * turns. Shared by the roles whose prompts carry the conversation (router, chat).
 */
export function renderConversation(messages: readonly ChatMessage[], view: ConversationView = {}): string {
  const kept = view.lastTurns === undefined ? messages : messages.slice(-view.lastTurns);
  if (kept.length === 0) return "(none)";
  const cut = (s: string) =>
    view.maxTurnChars === undefined || s.length <= view.maxTurnChars ? s : `${s.slice(0, view.maxTurnChars - 1)}…`;
  return kept.map((m) => `${m.role}: ${cut(m.content.trim())}`).join("\n\n");
}
