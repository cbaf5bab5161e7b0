import { LIMITS, MAX_TOKEN_DELTA_CHARS, SCHEMA_VERSION, parseTaskId } from "@agentmesh/contracts";
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
export function tokenStreamer(
  task: StreamingTask,
  sink: TokenSink,
  log: Logger,
  now: () => number = Date.now,
): (delta: string) => void {
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
          timestamp: now(),
          task_id: task.task_id,
          role: task.role,
          op: task.op,
          attempt: task.attempt,
          seq: n,
          delta: piece,
        });
      } catch (err) {
        if (!warned)
          log.warn(
            { err: (err as Error).message, seq: n },
            "cannot publish a token delta; the task goes on without live tokens",
          );
        warned = true;
      }
    }
  };
}

/** Ends a model's text that was cut to `LIMITS.maxTextChars`. */
export const TEXT_CUT_MARKER = "\n[...truncated]";
/** The start of an over-long text kept before the marker; a text call streams no more than this, so what streamed always starts the op's text. */
const TEXT_KEPT_CHARS = LIMITS.maxTextChars - TEXT_CUT_MARKER.length;

/** The first `n` UTF-16 units of `text`, one fewer when the n-th is the first half of a surrogate pair. */
function head(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/**
 * A text call's reply within `LIMITS.maxTextChars`, the longest text any response field holds: an
 * over-long reply keeps its start and is marked, rather than failing its op after it streamed
 * (and failing again when the op is retried).
 */
export const cutModelText = (text: string): string =>
  text.length <= LIMITS.maxTextChars ? text : head(text, TEXT_KEPT_CHARS) + TEXT_CUT_MARKER;

/** Wraps one text call's `onToken` to pass on only the start of the reply that `cutModelText` keeps. */
export function keptOnly(onToken: (delta: string) => void): (delta: string) => void {
  let sent = 0;
  return (delta) => {
    const room = TEXT_KEPT_CHARS - sent;
    sent += delta.length;
    if (room <= 0) return;
    const piece = delta.length < room ? delta : head(delta, room);
    if (piece !== "") onToken(piece);
  };
}

const FENCE = "```";

/**
 * What a reply's opening says it is: `json` when it starts with `{`, or with a code fence whose
 * first line is followed by `{` (models often fence their JSON); `prose` otherwise; null while the
 * text so far cannot tell (empty, part of a fence, or a fence whose first line has not ended).
 */
function openingOf(text: string): "json" | "prose" | null {
  if (text === "") return null;
  if (text.startsWith("{")) return "json";
  if (!text.startsWith(FENCE)) return FENCE.startsWith(text) ? null : "prose";
  const lineEnd = text.indexOf("\n");
  if (lineEnd < 0) return null;
  const body = text.slice(lineEnd + 1).trimStart();
  if (body === "") return null;
  return body.startsWith("{") ? "json" : "prose";
}

/**
 * Wraps one model call's `onToken` so that only prose reaches clients: deltas are held until the
 * reply's opening decides (see `openingOf`); a JSON object, bare or fenced, may be a tool call
 * (which the OpenAI-compatible gateway would otherwise pass on as the answer) and nothing of it is
 * published (should the op find it is an answer after all, the gateway sends it whole at the
 * end); otherwise what was held goes out as one delta from that character on (an op using
 * this answers with its text from there, so the streamed text stays a prefix of the answer) and
 * the rest streams as it comes.
 * Whether a reply streams depends only on its text, so a redelivered task numbers its tokens the
 * same way.
 */
export function proseOnly(onToken: (delta: string) => void): (delta: string) => void {
  let held = "";
  let kind: "undecided" | "prose" | "json" = "undecided";
  return (delta) => {
    if (kind === "prose") return onToken(delta);
    if (kind === "json") return;
    held += delta;
    const text = held.trimStart();
    const opening = openingOf(text);
    if (opening === null) return;
    kind = opening;
    if (kind === "prose") onToken(text);
    held = "";
  };
}
