import { z } from "zod";
import { SessionId } from "./subjects.js";

/**
 * Task ids are derived, never random: `<sid>.<version>.<index>.<attempt>`. Re-running a step
 * after a crash mints the same ids, so de-duplication works.
 */
export const TaskId = z.string().regex(/^[A-Za-z0-9_-]{8,64}\.\d+\.\d+\.\d+$/, "malformed task id");
export type TaskId = z.infer<typeof TaskId>;

/** Mints the task id for the `index`-th dispatch of the transition that produced `version`. */
export function taskId(sessionId: string, version: number, index: number, attempt: number): string {
  return `${SessionId.parse(sessionId)}.${version}.${index}.${attempt}`;
}

/** Splits a task id into its parts; null when malformed. */
export function parseTaskId(id: string): { sessionId: string; version: number; index: number; attempt: number } | null {
  if (!TaskId.safeParse(id).success) return null;
  const parts = id.split(".");
  const [sessionId, v, i, a] = parts as [string, string, string, string];
  return { sessionId, version: Number(v), index: Number(i), attempt: Number(a) };
}

/** Inbox message ids (JetStream de-dup and the session's applied markers). */
export const inputIds = {
  start: (sid: string) => `start:${sid}`,
  result: (tid: string) => `result:${tid}`,
  timer: (tid: string) => `timer:${tid}`,
  user: (id: string) => `user:${id}`,
  cancel: (id: string) => `cancel:${id}`,
} as const;
