import { defineAgent, type OfflineContext } from "@agentmesh/agent-kit";
import { SpecialistAnswer, type SpecialistRequest } from "@agentmesh/contracts";
import { classifyQuestion } from "@agentmesh/offline-kit";

/** What the model writes: the answer's text only; small talk cites nothing. */
const ChitchatDraft = SpecialistAnswer.pick({ response_str: true });
type ChitchatDraft = Pick<SpecialistAnswer, "response_str">;

const THANKS = new Set("thanks thank thx ty tysm cheers appreciate appreciated grateful merci danke gracias".split(" "));

/** True for a short thank-you ("Thanks!", "thank you so much", "cheers, that helped"). */
export function isThanks(question: string): boolean {
  const words = question.toLowerCase().match(/[a-z]+/g) ?? [];
  return words.length > 0 && words.length <= 8 && words.some((w) => THANKS.has(w));
}

/** What this system answers without a language model: the specialists that work from their own data. */
const OFFLINE_SCOPE =
  "Without a language model, the specialists answer from their own data: the knowledge graph (relationships, interactions and pathways, with its triples as sources), " +
  "the document corpus (passages with citations) and the configured MCP servers' tools. Ask such a question, e.g. \"How is the coordinator related to the session inbox?\"";

/** Offline: greets back a greeting, thanks back a thank-you, otherwise says what can be answered offline. */
export function chitchatOffline(input: SpecialistRequest, ctx: Pick<OfflineContext, "configHint">): ChitchatDraft {
  if (isThanks(input.question)) return { response_str: "You're welcome! Ask me another question whenever you like." };
  if (classifyQuestion(input.question).kind === "greeting") return { response_str: `Hello! I am agentmesh, a team of specialists that answer questions with their sources. ${OFFLINE_SCOPE}.` };
  return { response_str: `${OFFLINE_SCOPE}. ${ctx.configHint}` };
}

/** The chat role: halo's chitchat specialist (seed 000's ChitChatAgent). */
export default defineAgent({
  role: "chat",
  description: "Small talk: greets, thanks back and says what the system can answer; cites nothing",
  ops: {
    chitchat: {
      kind: "handler",
      version: "chat.chitchat/1",
      contract: "chat.chitchat",
      run: async (input, ctx) => {
        const draft = await ctx.complete({ schema: ChitchatDraft, schemaName: "chat_chitchat", prompt: `Message: ${input.question}` });
        return { response_str: draft.response_str, citations: [] };
      },
      summarize: (o) => `${o.response_str.length} characters of small talk`,
      // the handler's model call, answered offline
      offline: chitchatOffline,
    },
  },
});
