import type { OfflineContext } from "@agentmesh/agent-kit";
import type { ChatRespondRequest, SpecialistAnswer, SpecialistRequest } from "@agentmesh/contracts";
import { classifyQuestion } from "@agentmesh/offline-kit";

// The chat role's offline behaviours: what needs no model (a greeting back, thanks back), and
// otherwise what can be answered offline and how to configure a model. Nothing is made up.

const THANKS = new Set(
  "thanks thank thx ty tysm cheers appreciate appreciated grateful merci danke gracias".split(" "),
);

/** True for a short thank-you ("Thanks!", "thank you so much", "cheers, that helped"). */
export function isThanks(question: string): boolean {
  const words = question.toLowerCase().match(/[a-z]+/g) ?? [];
  return words.length > 0 && words.length <= 8 && words.some((w) => THANKS.has(w));
}

/** What this system answers without a language model: the specialists that work from their own data. */
const OFFLINE_SCOPE =
  "Without a language model, the specialists answer from their own data: the knowledge graph (relationships, interactions and pathways, with its triples as sources), " +
  'the document corpus (passages with citations) and the configured MCP servers\' tools. Ask such a question, e.g. "How is the coordinator related to the session inbox?"';
const THANKS_BACK = "You're welcome! Ask me another question whenever you like.";
const GREETING = `Hello! I am agentmesh, a team of specialists that answer questions with their sources. ${OFFLINE_SCOPE}.`;

/** Offline chitchat: greets back a greeting, thanks back a thank-you, otherwise says what can be answered offline. */
export function chitchatOffline(
  input: SpecialistRequest,
  ctx: Pick<OfflineContext, "configHint">,
): Pick<SpecialistAnswer, "response_str"> {
  if (isThanks(input.question)) return { response_str: THANKS_BACK };
  if (classifyQuestion(input.question).kind === "greeting") return { response_str: GREETING };
  return { response_str: `${OFFLINE_SCOPE}. ${ctx.configHint}` };
}

/**
 * Offline chat.respond (the supervisor's chat agent): the same greeting and thanks; otherwise it
 * says plainly that it cannot answer without a model, what works offline and how to configure a
 * model. It never calls a tool.
 */
export function respondOffline(input: ChatRespondRequest, ctx: Pick<OfflineContext, "configHint">): string {
  const said = input.brief.task;
  if (isThanks(said)) return THANKS_BACK;
  if (classifyQuestion(said).kind === "greeting") return GREETING;
  return `I cannot answer this without a language model. ${OFFLINE_SCOPE}. ${ctx.configHint}`;
}
