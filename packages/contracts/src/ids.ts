import { z } from "zod";

/**
 * Every id the system mints or reads, in one module: session and thread ids, task ids, the
 * inbox's input ids, the events' JetStream message ids and the durable timer set's members.
 * Random ids come from `newSessionId`, `newThreadId` and `newUserInputId` only; everything else
 * is derived, so a step run again mints the same ids.
 */

/** A session id is one NATS subject token and one Redis hash tag: no dots, no wildcards. */
export const SessionId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "session id must be 8-64 of [A-Za-z0-9_-]");
export type SessionId = z.infer<typeof SessionId>;

/** A thread ties sessions into one conversation; its id has a session id's shape (a client may choose it). */
export const ThreadId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "thread id must be 8-64 of [A-Za-z0-9_-]");
export type ThreadId = z.infer<typeof ThreadId>;

/**
 * 122 random bits as 32 lowercase hex digits (a v4 UUID without its dashes), from the runtime's
 * Web Crypto global, so this module needs no Node built-in.
 */
function randomToken(): string {
  return globalThis.crypto.randomUUID().replaceAll("-", "");
}

/**
 * A new session id: 32 lowercase hex digits. Every minter (the coordinator, the CLI, the
 * gateway) uses this one. Ids of other shapes that `SessionId` accepts are still read: sessions
 * stored before (the gateway's `s` + 16 base64url characters) and ids a client chose.
 */
export function newSessionId(): SessionId {
  return randomToken();
}

/** A new thread id, of the same shape as a new session id. */
export function newThreadId(): ThreadId {
  return randomToken();
}

/**
 * Task ids are derived, never random: `<sid>.<version>.<index>.<attempt>.<made>`, where `<made>`
 * is a digest of the input that made the version (`madeByTag`). Re-running a step after a crash
 * (the same input on the same version) mints the same ids, so de-duplication works. A version made
 * again from another input, after a Redis failover lost the first one (docs/redis-failover.md),
 * mints other ids, so nothing of the lost version can be taken for the new one. Ids without the
 * last part, which an earlier release stored, are still read.
 */
export const TaskId = z.string().regex(/^[A-Za-z0-9_-]{8,64}\.\d+\.\d+\.\d+(?:\.[0-9a-z]{1,7})?$/, "malformed task id");
export type TaskId = z.infer<typeof TaskId>;

/** FNV-1a (32 bits) of a string: a cheap, stable digest for ids and jitter. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The last part of the ids a transition mints: a digest of the id of the input it applied, with
 * the session's own id left out, so sessions with the same history mint ids of the same shape.
 */
export function madeByTag(sessionId: string, inputId: string): string {
  return fnv1a(inputId.split(sessionId).join("")).toString(36);
}

/** Mints the task id for the `index`-th dispatch of the transition that produced `version` from input `madeBy`. */
export function taskId(sessionId: string, version: number, index: number, attempt: number, madeBy?: string): string {
  const base = `${SessionId.parse(sessionId)}.${version}.${index}.${attempt}`;
  return madeBy === undefined ? base : `${base}.${madeByTag(sessionId, madeBy)}`;
}

/** A task id's parts (`made` null for an id of an earlier release). */
export interface TaskIdParts {
  readonly sessionId: string;
  readonly version: number;
  readonly index: number;
  readonly attempt: number;
  readonly made: string | null;
}

/** Splits a task id into its parts; null when malformed. */
export function parseTaskId(id: string): TaskIdParts | null {
  if (!TaskId.safeParse(id).success) return null;
  const [sessionId, v, i, a, made] = id.split(".") as [string, string, string, string, string | undefined];
  return { sessionId, version: Number(v), index: Number(i), attempt: Number(a), made: made ?? null };
}

/** Who sends a session's cancel from outside: one cancel per session and client, so a repeat is a duplicate. */
export type CancelClient = "cli" | "gateway";

/** Inbox message ids (JetStream de-dup and the session's applied markers). */
export const inputIds = {
  start: (sid: string) => `start:${sid}`,
  result: (tid: string) => `result:${tid}`,
  timer: (tid: string) => `timer:${tid}`,
  /** The timer input of a session's own deadline. */
  sessionTimer: (sid: string) => `timer:session.${sid}`,
  user: (id: string) => `user:${id}`,
  cancel: (id: string) => `cancel:${id}`,
  /** The cancel a client (the CLI or a gateway) sends for a session. */
  clientCancel: (sid: string, client: CancelClient) => `cancel:${sid}-${client}`,
} as const;

/** A new id for a person's reply (`user:` and a random token): each reply is its own input. */
export function newUserInputId(): string {
  return inputIds.user(randomToken());
}

/** The JetStream message id of one bare event (as events went out before batches, and still do when one fits only alone). */
export const eventMsgId = (sid: string, version: number, index: number) => `${sid}:${version}:${index}`;

/**
 * The JetStream message id of an `EventBatch`: the session, the transition's version, its first
 * event's index and how many it holds. A republished outbox splits its events the same way, so it
 * is a duplicate; and it never equals a bare event's id, so a batch is not mistaken for a bare
 * event an earlier version published before a crash (readers skip the events they already had).
 */
export const eventBatchMsgId = (sid: string, version: number, first: number, count: number) =>
  `${sid}:${version}:${first}+${count}`;

/** Members of the durable timer set; the coordinator turns a due member back into a `timer` input. */
export const timerMember = {
  /** The deadline of one awaited task. */
  task: (taskId: string): string => `task:${taskId}`,
  /** The wall-clock deadline of a session. */
  session: (sessionId: string): string => `session:${sessionId}`,
} as const;

/** A parsed timer member. */
export type TimerTarget =
  | { readonly kind: "task"; readonly taskId: string; readonly sessionId: string }
  | { readonly kind: "session"; readonly sessionId: string };

/** Splits a timer member into what it names; null when malformed (never fire a timer we cannot name). */
export function parseTimerMember(member: string): TimerTarget | null {
  const colon = member.indexOf(":");
  if (colon < 0) return null;
  const kind = member.slice(0, colon);
  const rest = member.slice(colon + 1);
  if (kind === "task") {
    // The session id is part of the derived task id, so a task timer knows which inbox to feed.
    const parsed = parseTaskId(rest);
    return parsed ? { kind: "task", taskId: rest, sessionId: parsed.sessionId } : null;
  }
  if (kind === "session" && SessionId.safeParse(rest).success) return { kind: "session", sessionId: rest };
  return null;
}
