import { z } from "zod";
import { SCHEMA_VERSION } from "./limits.js";
import { SessionId } from "./subjects.js";
import { ErrorCode } from "./errors.js";
import { Provenance } from "./provenance.js";
import { SessionStatus } from "./state.js";

const Base = {
  v: z.literal(SCHEMA_VERSION),
  session_id: SessionId,
  /** Session version of the transition that emitted it; with `index` it names the event. */
  version: z.number().int().nonnegative(),
  index: z.number().int().nonnegative(),
  at: z.number().int().nonnegative(),
};

/** Lifecycle events on `<p>.events.<sid>` (replayable) and token deltas on `<p>.tokens.<sid>`. */
export const SessionEvent = z.discriminatedUnion("type", [
  z.object({ ...Base, type: z.literal("stage"), stage: z.string().max(40), status: z.enum(["started", "completed"]), detail: z.string().max(2000) }),
  z.object({ ...Base, type: z.literal("step"), task_id: z.string(), summary: z.string().max(2000), provenance: Provenance }),
  z.object({ ...Base, type: z.literal("token"), task_id: z.string(), delta: z.string().max(4000) }),
  z.object({ ...Base, type: z.literal("tool_call"), task_id: z.string(), tool: z.string().max(80), args_digest: z.string().max(128) }),
  z.object({ ...Base, type: z.literal("tool_result"), task_id: z.string(), tool: z.string().max(80), ok: z.boolean(), latency_ms: z.number().nonnegative() }),
  z.object({ ...Base, type: z.literal("error"), code: ErrorCode, message: z.string().max(4000), component: z.string().max(100).nullable() }),
  z.object({
    ...Base,
    type: z.literal("complete"),
    status: SessionStatus,
    final_answer: z.string(),
    final_reasoning_trace: z.string(),
  }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
export type SessionEventType = SessionEvent["type"];

/** An event before the runtime stamps its identity (what a workflow's step() emits). */
export type EventDraft = SessionEvent extends infer E ? (E extends SessionEvent ? Omit<E, "v" | "session_id" | "version" | "index" | "at"> : never) : never;

/** The JetStream message id of an event. */
export const eventMsgId = (sid: string, version: number, index: number) => `${sid}:${version}:${index}`;
