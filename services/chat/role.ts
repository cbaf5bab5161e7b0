import { defineAgent } from "@agentmesh/agent-kit";
import { SpecialistAnswer, STREAMING_CONFIG } from "@agentmesh/contracts";
import { chitchatOffline, respondOffline } from "./offline.js";
import { renderRespond, toAgentAction } from "./respond.js";

/** What the model writes: the answer's text only; small talk cites nothing. */
const ChitchatDraft = SpecialistAnswer.pick({ response_str: true });

/** The chat role: halo's chitchat specialist (ChitChatAgent) and the supervisor's chat agent. */
export default defineAgent({
  role: "chat",
  description: "Small talk for halo; the supervisor's chat agent, which answers (streamed), calls a tool or hands off",
  ops: {
    chitchat: {
      kind: "handler",
      version: "chat.chitchat/1",
      contract: "chat.chitchat",
      run: async (input, ctx) => {
        const draft = await ctx.complete({
          schema: ChitchatDraft,
          schemaName: "chat_chitchat",
          prompt: `Message: ${input.question}`,
        });
        return { response_str: draft.response_str, citations: [] };
      },
      summarize: (o) => `${o.response_str.length} characters of small talk`,
      // the handler's model call, answered offline
      offline: chitchatOffline,
    },
    respond: {
      contract: "chat.respond",
      output: "text",
      // the `agent` node streams; a tool call's JSON never does (clients show every token as the answer)
      stream: STREAMING_CONFIG.agent,
      streamOnlyProse: true,
      render: renderRespond,
      toOutput: toAgentAction,
      summarize: (o) => (o.action === "answer" ? `an answer of ${o.text.length} characters` : `calls ${o.tool}`),
      offline: respondOffline,
    },
  },
});
