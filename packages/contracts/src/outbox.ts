import { z } from "zod";
import { TaskEnvelope, CancelNotice } from "./messages.js";
import { SessionEvent } from "./events.js";
import { Traceparent } from "./headers.js";

/** What a transition must publish, written with the state in one CAS and published after. */
export const OutboxEntry = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("task"), task: TaskEnvelope }),
  z.object({ kind: z.literal("event"), event: SessionEvent }),
  z.object({ kind: z.literal("cancel"), notice: CancelNotice }),
]);
export type OutboxEntry = z.infer<typeof OutboxEntry>;

/**
 * The outbox of one transition; `version` is the session version that wrote it. `traceparent`
 * names the transition's span: every entry is published with it, so a re-publish after a crash
 * keeps the session's trace and the tasks' parent.
 */
export const Outbox = z.object({
  version: z.number().int().positive(),
  entries: z.array(OutboxEntry).max(256),
  traceparent: Traceparent.optional(),
});
export type Outbox = z.infer<typeof Outbox>;
