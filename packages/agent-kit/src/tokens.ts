import { LIMITS, MAX_TOKEN_DELTA_CHARS, SCHEMA_VERSION, parseTaskId } from "@agentmesh/contracts";
import type { TokenEvent } from "@agentmesh/messaging";
import type { Logger } from "@agentmesh/service-kit";

/**
 * Where a running op's token messages go: the agent stores them in JetStream on
 * `<p>.tokens.<sid>.<role>` (docs/events.md). The promise settles when the message is stored.
 */
export type TokenSink = (t: TokenEvent) => Promise<void> | void;

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
 * How a model's deltas become token messages: a message goes out once `ms` have passed since the
 * previous one or `chars` are held, so a fast model sends about 20 messages a second, not one per
 * delta; the first delta goes out at once. `flushWaitMs` bounds how long the end of a run waits
 * for its messages to be stored.
 */
export const TOKEN_COALESCING = { ms: 50, chars: 256, flushWaitMs: 2_000 } as const;

/** The token stream of one run of a task. */
export interface TokenStream {
  /** Takes the next delta of the run's text. */
  readonly onToken: (delta: string) => void;
  /**
   * Sends what is held, then waits until every message sent is stored (at most
   * `flushWaitMs`), so the run's tokens precede its result in the events stream.
   */
  flush(): Promise<void>;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** One token message of a task's run. */
function tokenMessage(
  task: StreamingTask,
  timestamp: number,
  at: { seq: number; offset: number; delta: string },
): TokenEvent {
  const ids = parseTaskId(task.task_id);
  return {
    v: SCHEMA_VERSION,
    type: "token",
    session_id: task.session_id,
    // the transition that dispatched the task and the task's place in it, as its id says
    version: ids?.version ?? 0,
    index: ids?.index ?? 0,
    timestamp,
    task_id: task.task_id,
    role: task.role,
    op: task.op,
    attempt: task.attempt,
    ...at,
  };
}

/**
 * The token stream of one run of a task. Each message carries `offset`, where its text starts in
 * the run's text (a redelivered task streams again from 0 and a client keeps only what it lacks:
 * messaging's `createTokenDedup`), and `seq`, its number in the run. Best-effort: a publish that
 * fails is logged once and the task goes on.
 */
export function tokenStreamer(
  task: StreamingTask,
  sink: TokenSink,
  log: Logger,
  o: { now?: () => number; coalescing?: Partial<typeof TOKEN_COALESCING> } = {},
): TokenStream {
  const c = { ...TOKEN_COALESCING, ...o.coalescing };
  const now = o.now ?? Date.now;
  const inflight = new Set<Promise<void>>();
  const st = { held: "", offset: 0, seq: 0, lastSent: -Infinity, warned: false };
  let timer: ReturnType<typeof setTimeout> | null = null;
  const warn = (err: unknown, seq: number) => {
    if (!st.warned)
      log.warn(
        { err: err instanceof Error ? err.message : String(err), seq },
        "cannot publish a token delta; the task goes on without live tokens",
      );
    st.warned = true;
  };
  const emit = (piece: string) => {
    const seq = st.seq++;
    const offset = st.offset;
    st.offset += piece.length;
    try {
      const stored = Promise.resolve(sink(tokenMessage(task, now(), { seq, offset, delta: piece }))).catch(
        (err: unknown) => warn(err, seq),
      );
      inflight.add(stored);
      void stored.finally(() => inflight.delete(stored));
    } catch (err) {
      warn(err, seq);
    }
  };
  /** Sends what is held; mid-stream a trailing half surrogate pair waits for its other half. */
  const send = (final: boolean) => {
    if (timer) clearTimeout(timer);
    timer = null;
    let text = st.held;
    if (!final && text.length > 1 && isHighSurrogate(text.charCodeAt(text.length - 1))) text = text.slice(0, -1);
    if (text === "") return;
    st.held = st.held.slice(text.length);
    for (const piece of splitDelta(text)) emit(piece);
    st.lastSent = now();
  };
  return {
    onToken(delta) {
      if (delta === "") return;
      st.held += delta;
      const since = now() - st.lastSent;
      if (st.held.length >= c.chars || since >= c.ms) send(false);
      else if (timer === null) {
        timer = setTimeout(() => send(false), c.ms - since);
        timer.unref?.();
      }
    },
    async flush() {
      send(true);
      if (inflight.size === 0) return;
      let wait: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...inflight]),
        new Promise<void>((resolve) => (wait = setTimeout(resolve, c.flushWaitMs))),
      ]);
      clearTimeout(wait);
    },
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
