import { z } from "zod";

/** Header names carried by every message (lowercase; NATS headers are case-sensitive). */
export const HEADERS = {
  traceparent: "traceparent",
  sessionId: "x-session-id",
  taskId: "x-task-id",
  schemaVersion: "x-schema-v",
  /** The session's thread, when it has one: agents put it on their spans (Langfuse groups a conversation by it). */
  threadId: "x-thread-id",
} as const;

/** W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>. */
export const Traceparent = z.string().regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);

/**
 * A session's trace, minted when it is created and stored in its meta: every span of the session
 * (transitions, tasks, model calls) belongs to `trace_id`, and the session's root span, written
 * only at its terminal transition, has the id `root_span_id` fixed now so earlier spans can name
 * it as their parent. `parent_span_id` is the client's span the session continues (a submit that
 * carried a traceparent), else null.
 */
export const SessionTrace = z.object({
  trace_id: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .refine((s) => /[^0]/.test(s), "an all-zero trace id is invalid"),
  root_span_id: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .refine((s) => /[^0]/.test(s), "an all-zero span id is invalid"),
  parent_span_id: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .nullable(),
  sampled: z.boolean(),
});
export type SessionTrace = z.infer<typeof SessionTrace>;

/** The traceparent of a span of `trace` (its root span when `spanId` is omitted). */
export function sessionTraceparent(trace: SessionTrace, spanId: string = trace.root_span_id): string {
  return `00-${trace.trace_id}-${spanId}-${trace.sampled ? "01" : "00"}`;
}
