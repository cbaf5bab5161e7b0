import type { Capability, ErrorCode, HaloCitation, SpecialistAnswer, SpecialistOutput } from "@agentmesh/contracts";

/** The seed's short availability message: what a specialist that failed or missed the join contributes. */
export const availabilityMessage = (capability: Capability): string =>
  `The ${capability} specialist is unavailable right now.`;

/** What makes two citations one source: the URL, else the path (a citation has one or the other). */
export const citationKey = (c: HaloCitation): string => c.url ?? c.path ?? c.title;

/** How many different sources an output cites. */
export const sourceCount = (o: SpecialistOutput): number => new Set(o.citations.map(citationKey)).size;

/** Agent tags a specialist may put in its text (`[Graph]`, `[RAG]`, `[BioMCP Agent]`, …): the synthesis is one voice. */
const AGENT_TAG =
  /\[(?:graph|rag|llama ?rag|bio ?mcp|web|web ?reasoning|llama[ _]?mcp|chit ?chat|chat|halo)(?: agent)?\]/gi;
/** A specialist's own citation numbers (`[2]`, `[1,3]`): they mean nothing in the merged list, which gets its own. */
const OWN_MARKER = /\[\d+(?:\s*[,–-]\s*\d+)*\]/g;

/** A specialist's text without agent tags or its own citation numbers, spacing tidied. */
export function stripAgentTags(text: string): string {
  return text
    .replace(AGENT_TAG, "")
    .replace(OWN_MARKER, "")
    .replace(/[ \t]+([.,;:!?])/g, "$1")
    .replace(/[ \t]{2,}/g, " ")
    .replace(/^[ \t]+|[ \t]+$/gm, "")
    .trim();
}

/**
 * A specialist's answer as it enters the session, its text already without tags. An answer that
 * was nothing but tags is no answer: the specialist counts as unavailable (`invalid_message`).
 */
export function answeredOutput(capability: Capability, answer: SpecialistAnswer, latencyMs: number): SpecialistOutput {
  const text = stripAgentTags(answer.response_str);
  if (text.length === 0) return unavailableOutput(capability, "invalid_message", latencyMs);
  return {
    capability,
    status: "answered",
    response_str: text,
    citations: answer.citations,
    error_code: null,
    latency_ms: Math.max(0, Math.round(latencyMs)),
  };
}

/** A specialist that failed (`error_code`), or that the join deadline gave up on (`deadline_exceeded`). */
export function unavailableOutput(capability: Capability, errorCode: ErrorCode, latencyMs: number): SpecialistOutput {
  return {
    capability,
    status: "unavailable",
    response_str: availabilityMessage(capability),
    citations: [],
    error_code: errorCode,
    latency_ms: Math.max(0, Math.round(latencyMs)),
  };
}
