import type { DomainHints } from "@agentmesh/contracts";

/**
 * The judge's own domain hints: a question in a
 * specialist's domain raises that specialist's answer by `bonus`. A deployment replaces the
 * whole table through its config (copied into the session as `domain_hints`).
 */
export const DEFAULT_DOMAIN_HINTS: DomainHints = {
  graph: {
    bonus: 1,
    keywords: [
      "relationship",
      "relationships",
      "interaction",
      "interactions",
      "interacts",
      "pathway",
      "pathways",
      "associated with",
      "linked to",
      "connected to",
    ],
  },
  rag: {
    bonus: 1,
    keywords: [
      "document",
      "documents",
      "paper",
      "papers",
      "guideline",
      "guidelines",
      "according to",
      "our notes",
      "literature",
    ],
  },
  biomcp: {
    bonus: 1,
    keywords: [
      "gene",
      "genes",
      "variant",
      "variants",
      "mutation",
      "mutations",
      "clinical trial",
      "clinical trials",
      "drug",
      "drugs",
      "therapy",
      "protein",
      "disease",
      "cancer",
      "biomarker",
    ],
  },
  llama_mcp: { bonus: 1, keywords: ["llamaindex", "llama index", "llamacloud"] },
  web: { bonus: 1, keywords: ["latest", "news", "today", "recent", "current", "this week", "this year"] },
  chitchat: { bonus: 1, keywords: ["hello", "hi", "hey", "thanks", "thank you", "how are you"] },
};
