import { SessionId, parseTaskId } from "@agentmesh/contracts";

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
