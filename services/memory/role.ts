import { defineAgent } from "@agentmesh/agent-kit";
import { foldMemory } from "./fold.js";

/** The memory agent: folds each event into the session memory it is given. No model. */
export default defineAgent({
  role: "memory",
  description:
    "Folds a perception, a step outcome or a person's reply into the session memory: short-term items, banned and successful tools",
  ops: {
    update: {
      kind: "handler",
      version: "memory.update/fold-1",
      contract: "memory.update",
      run: (input) => Promise.resolve(foldMemory(input)),
      summarize: (o) =>
        `${o.short_term.length} short-term items, ${o.banned_tools.length} banned, ${o.successful_tools.length} successful tools`,
    },
  },
});
