import { ANSWER_OPS, type SessionEvent } from "@agentmesh/contracts";

type Token = Extract<SessionEvent, { type: "token" }>;

/** Whether a token delta is the answering node's text (the final answer as it is written: ANSWER_OPS). */
export const isAnswerToken = (t: Pick<Token, "role" | "op">): boolean =>
  t.role !== undefined && t.op !== undefined && ANSWER_OPS.has(`${t.role}.${t.op}`);

/**
 * What is left of the final answer after the answering node's streamed text: the rest when the
 * stream was its beginning (all of it when nothing streamed); nothing when the answer was cut to
 * fit its event (`truncated`) and the stream holds all of it; null when they disagree (the node
 * ran again after a failure and said something else), which a stream reports rather than sending
 * text twice (docs/gateway.md, "The stream").
 */
export function answerRemainder(streamed: string, final: string, truncated = false): string | null {
  if (final.startsWith(streamed)) return final.slice(streamed.length);
  return truncated && streamed.startsWith(final) ? "" : null;
}
