import { z } from "zod";

/** Header names carried by every message (lowercase; NATS headers are case-sensitive). */
export const HEADERS = {
  traceparent: "traceparent",
  sessionId: "x-session-id",
  taskId: "x-task-id",
  schemaVersion: "x-schema-v",
} as const;

/** W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>. */
export const Traceparent = z.string().regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
