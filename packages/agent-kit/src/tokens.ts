import { MAX_TOKEN_DELTA_CHARS, SCHEMA_VERSION, parseTaskId } from "@agentmesh/contracts";
import type { TokenEvent } from "@agentmesh/messaging";
import type { Logger } from "@agentmesh/service-kit";

/** Where a running op's token messages go; the agent publishes them on `<p>.tokens.<sid>` (core NATS). */
export type TokenSink = (t: TokenEvent) => void;

/** The task a token stream belongs to. */
interface StreamingTask {
  readonly task_id: string;
  readonly session_id: string;
  readonly role: string;
  readonly op: string;
  readonly attempt: number;
}

/** Cuts text into pieces of at most `max` UTF-16 units without splitting a surrogate pair. */
export function splitDelta(text: string, max: number = MAX_TOKEN_DELTA_CHARS): string[] {
  const pieces: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + max, text.length);
    const code = text.charCodeAt(end - 1);
    if (end < text.length && end - at > 1 && code >= 0xd800 && code <= 0xdbff) end--;
    pieces.push(text.slice(at, end));
    at = end;
  }
  return pieces;
}

/**
 * The `onToken` of one run of a task: each delta becomes a token message numbered from seq 0 (a
 * redelivered task numbers its text again from 0, which is what lets a client drop what it showed:
 * messaging's `createTokenDedup`). Best-effort: a publish that fails is logged once and the task
 * goes on; the seq still advances, so a later run numbers the same text the same way.
 */
export function tokenStreamer(task: StreamingTask, sink: TokenSink, log: Logger, now: () => number = Date.now): (delta: string) => void {
  const ids = parseTaskId(task.task_id);
  let seq = 0;
  let warned = false;
  return (delta) => {
    for (const piece of splitDelta(delta)) {
      const n = seq++;
      try {
        sink({
          v: SCHEMA_VERSION,
          type: "token",
          session_id: task.session_id,
          // the transition that dispatched the task and the task's place in it, as its id says
          version: ids?.version ?? 0,
          index: ids?.index ?? 0,
          at: now(),
          task_id: task.task_id,
          role: task.role,
          op: task.op,
          attempt: task.attempt,
          seq: n,
          delta: piece,
        });
      } catch (err) {
        if (!warned) log.warn({ err: (err as Error).message, seq: n }, "cannot publish a token delta; the task goes on without live tokens");
        warned = true;
      }
    }
  };
}
