import { z } from "zod";
import { SessionId } from "./subjects.js";

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

/** Splits a task id into its parts (`made` null for an id of an earlier release); null when malformed. */
export function parseTaskId(
  id: string,
): { sessionId: string; version: number; index: number; attempt: number; made: string | null } | null {
  if (!TaskId.safeParse(id).success) return null;
  const [sessionId, v, i, a, made] = id.split(".") as [string, string, string, string, string | undefined];
  return { sessionId, version: Number(v), index: Number(i), attempt: Number(a), made: made ?? null };
}

/** Inbox message ids (JetStream de-dup and the session's applied markers). */
export const inputIds = {
  start: (sid: string) => `start:${sid}`,
  result: (tid: string) => `result:${tid}`,
  timer: (tid: string) => `timer:${tid}`,
  user: (id: string) => `user:${id}`,
  cancel: (id: string) => `cancel:${id}`,
} as const;
