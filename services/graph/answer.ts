import type { HandlerContext } from "@agentmesh/agent-kit";
import { HALO_LIMITS, type SpecialistAnswer, type SpecialistRequest } from "@agentmesh/contracts";
import type { GraphAnswer, KnowledgeGraph } from "@agentmesh/tools";
import { z } from "zod";

/**
 * What a model writes from the triples: the prose only. The citations are the triples the query
 * found, attached by the handler, so a model can neither drop nor invent one.
 */
export const GraphDraft = z.object({
  answer: z
    .string()
    .max(HALO_LIMITS.maxAnswerChars)
    .refine((s) => s.trim().length > 0, "an answer needs some text"),
});
export type GraphDraft = z.infer<typeof GraphDraft>;

/** The model's prompt: the question and the facts found, one line per triple. */
export function renderGraphPrompt(question: string, found: GraphAnswer): string {
  const facts = found.hits.map((h, i) => `${i + 1}. ${h.triple.subject} | ${h.triple.predicate} | ${h.triple.object}`);
  return [
    `Question: ${question}`,
    `Facts from the knowledge graph (subject | predicate | object):\n${facts.join("\n")}`,
    "Answer the question from these facts only.",
  ].join("\n\n");
}

/** The offline engine's draft: the facts found, one sentence each (no model needed). */
export function graphDraftOffline(graph: KnowledgeGraph): (input: SpecialistRequest) => GraphDraft {
  return (input) => ({ answer: graph.query(input.question).text });
}

/**
 * graph.answer: the triples the query finds, written as prose by the model (or, offline, as one
 * sentence per triple), each triple's source its citation. Nothing found is an honest short
 * answer with no citations, not a failure, and costs no model call.
 */
export async function answerFromGraph(
  graph: KnowledgeGraph,
  req: SpecialistRequest,
  ctx: Pick<HandlerContext, "complete">,
): Promise<SpecialistAnswer> {
  const found = graph.query(req.question);
  const citations = found.citations.map((c) => ({ title: c.title, url: c.url, path: c.path, snippet: c.snippet }));
  if (found.hits.length === 0) return { response_str: found.text, citations };
  const draft = await ctx.complete({
    schema: GraphDraft,
    schemaName: "graph_answer",
    prompt: renderGraphPrompt(req.question, found),
  });
  return { response_str: draft.answer.trim(), citations };
}
