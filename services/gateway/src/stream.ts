import type { SessionEvent } from "@agentmesh/contracts";
import { createTokenDedup, type StoredMessage, type TokenDedup, type TokenDelta } from "@agentmesh/messaging";
import type { EventHub } from "./fanout.js";

/**
 * Where a client is in a session's events: the `<version>:<index>` of the last one it saw and,
 * when its id carried one, the stream sequence of the message that held it.
 */
export interface EventCursor {
  readonly version: number;
  readonly index: number;
  readonly seq?: number;
}

/**
 * The SSE id of a stored message: `<seq>:<version>:<index>`, its stream sequence and the last event
 * the client has by then (an event's own; for a token delta, the event before it) (docs/events.md).
 */
export const eventId = (e: Required<EventCursor>): string => `${e.seq}:${e.version}:${e.index}`;

/**
 * Parses a `Last-Event-ID`: `<seq>:<version>:<index>`, or `<version>:<index>` as earlier releases
 * sent it (then the replay starts at the stream's first message). Null when absent, undefined when
 * malformed.
 */
export function parseEventId(raw: string | undefined | null): EventCursor | null | undefined {
  if (raw === undefined || raw === null || raw === "") return null;
  const m = /^(?:(\d{1,15}):)?(\d{1,15}):(\d{1,9})$/.exec(raw.trim());
  if (!m) return undefined;
  const at = { version: Number(m[2]), index: Number(m[3]) };
  return m[1] === undefined ? at : { ...at, seq: Number(m[1]) };
}

/** True when `e` comes after `c` in the session's order (versions, then indexes within one). */
export const isAfter = (e: EventCursor, c: EventCursor | null): boolean =>
  c === null || e.version > c.version || (e.version === c.version && e.index > c.index);

/**
 * One thing to send: a stored event or token delta, with the sequence of its message and the id
 * to send it under (null for a token before any event the client has, as after a cursor without
 * a sequence).
 */
export type StreamItem =
  | { readonly kind: "event"; readonly event: SessionEvent; readonly seq: number; readonly id: string }
  | { readonly kind: "token"; readonly event: TokenDelta; readonly seq: number; readonly id: string | null };

/** How much a stream may hold for a client that reads slower than its session speaks, by default. */
export const DEFAULT_STREAM_BUFFER_BYTES = 1024 * 1024;

/**
 * The stream held more than its buffer for a client that did not read: it ends, and the client
 * resumes after the last event it received.
 */
export class StreamOverflow extends Error {
  constructor(readonly limitBytes: number) {
    super(`the stream held over ${limitBytes} bytes the client had not read`);
  }
}

export interface SessionStreamOptions {
  /** Only events after this one (exclusive); null = from the first. */
  readonly after: EventCursor | null;
  /**
   * The first stream sequence the replay reads (default: the cursor's, else the stream's first):
   * for a session started after the hub was at some position, the message after it.
   */
  readonly fromSeq?: number | undefined;
  /** Also the session's token deltas (replayed from the cursor like events). */
  readonly tokens: boolean;
  readonly signal: AbortSignal;
  /** Bytes of live events and deltas the stream holds for its reader at most (default 1 MiB). */
  readonly bufferBytes?: number | undefined;
  /** The replica's total of bytes its streams hold, kept up to date by this one (for its metrics). */
  readonly buffered?: BufferedTotal | undefined;
}

/** Bytes held by every open stream of a replica, summed. */
export interface BufferedTotal {
  bytes: number;
}

type Live =
  { readonly kind: "message"; readonly m: StoredMessage } | { readonly kind: "closed"; readonly err: unknown };

/** The live side of one stream: what the hub handed on that the reader has not taken, within a byte bound. */
interface LiveQueue {
  take(): Live | undefined;
  /** Resolves when something arrives or the signal aborts. */
  wait(signal: AbortSignal): Promise<void>;
  /** Set once the bound was passed: the queue was emptied and hears nothing more. */
  readonly overflowed: boolean;
  close(): void;
}

function listenLive(hub: EventHub, sessionId: string, o: SessionStreamOptions): LiveQueue {
  const limit = o.bufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES;
  const items: Array<{ item: Live; bytes: number }> = [];
  let bytes = 0;
  let overflowed = false;
  let wake: (() => void) | null = null;
  // set once the listener is registered (the hub calls it only later, from its feed)
  let unlisten = () => {};
  const total = o.buffered ?? { bytes: 0 };
  const held = (n: number) => {
    bytes += n;
    total.bytes += n;
  };
  const push = (item: Live, size: number) => {
    if (overflowed) return;
    held(size);
    if (bytes > limit) {
      overflowed = true;
      items.length = 0;
      held(-bytes);
      unlisten();
    } else items.push({ item, bytes: size });
    wakeUp();
  };
  const wakeUp = () => {
    wake?.();
    wake = null;
  };
  o.signal.addEventListener("abort", wakeUp, { once: true });
  unlisten = hub.listen(sessionId, {
    message: (m) => push({ kind: "message", m }, m.bytes),
    tokens: o.tokens,
    closed: (err) => push({ kind: "closed", err }, 0),
  });
  return {
    take() {
      const x = items.shift();
      if (x) held(-x.bytes);
      return x?.item;
    },
    wait: (signal) =>
      new Promise<void>((resolve) => {
        if (items.length > 0 || overflowed || signal.aborted) return resolve();
        wake = resolve;
      }),
    get overflowed() {
      return overflowed;
    },
    close() {
      unlisten();
      o.signal.removeEventListener("abort", wakeUp);
      items.length = 0;
      held(-bytes);
    },
  };
}

/**
 * A session's events (and with `tokens` its token deltas) after the cursor, then live ones, until
 * the `complete` event (included; at once when the cursor is at or past it) or the signal.
 *
 * The stream listens to its replica's feed first, then replays the stored messages from the
 * cursor's sequence by direct gets; live messages that arrive meanwhile wait in its buffer. Then
 * it sends the session's messages the hub kept from just before it listened (in case the replay
 * was answered by a lagging stream replica), then the buffered and live ones. Every message is
 * sent only when its sequence is past the last one sent, so the hand-over from replay to live has
 * no gap (the listener was there before the replay's last read) and no repeat; events and token
 * deltas share the stream's one order, so a client resuming after either gets exactly what
 * followed it. Events are also strictly increasing by (version, index): a copy the broker holds
 * twice (published again after its de-dup window) is skipped. A token delta a redelivered task
 * streams again is cut to what the client lacks (`createTokenDedup`). A reader that leaves more
 * than the buffer unread ends the stream with `StreamOverflow`.
 */
export async function* sessionStream(
  hub: EventHub,
  sessionId: string,
  o: SessionStreamOptions,
): AsyncGenerator<StreamItem, void, undefined> {
  if (o.signal.aborted) return;
  await Promise.race([hub.ready(), aborted(o.signal)]);
  if (o.signal.aborted) return;
  const live = listenLive(hub, sessionId, o);
  const st: Position = {
    seq: (o.fromSeq ?? o.after?.seq ?? 1) - 1,
    last: o.after,
    ended: false,
    dedup: createTokenDedup(),
    tokensAfter: o.after?.seq ?? 0,
  };
  const stop = () => o.signal.aborted || st.ended;
  try {
    for await (const m of hub.replay(sessionId, st.seq + 1, o.tokens)) {
      if (stop()) return;
      if (live.overflowed) throw new StreamOverflow(o.bufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES);
      yield* messageItems(m, st);
      if (stop()) return;
    }
    // what the feed delivered before this stream listened and the replay did not read
    for (const m of hub.recent(sessionId, st.seq, o.tokens)) yield* messageItems(m, st);
    while (!stop()) {
      if (live.overflowed) throw new StreamOverflow(o.bufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES);
      const x = live.take();
      if (x === undefined) await live.wait(o.signal);
      else if (x.kind === "closed") throw x.err;
      else yield* messageItems(x.m, st);
    }
  } finally {
    live.close();
  }
}

/** Where a stream is: the last sequence sent, the last event sent, whether it ended, the tokens shown. */
interface Position {
  seq: number;
  last: EventCursor | null;
  ended: boolean;
  readonly dedup: TokenDedup;
  /**
   * The cursor's sequence: the message there is read again (a batch holds events on both sides
   * of the cursor), but a token delta there is the one the client has.
   */
  readonly tokensAfter: number;
}

/** What one message gives the client that it has not had; marks the stream ended at `complete`. */
function* messageItems(m: StoredMessage, st: Position): Generator<StreamItem, void, undefined> {
  if (m.seq <= st.seq || st.ended) return;
  st.seq = m.seq;
  if (m.kind === "token") {
    if (m.seq <= st.tokensAfter) return;
    const t = st.dedup.admit(m.token);
    const id = st.last === null ? null : eventId({ seq: m.seq, version: st.last.version, index: st.last.index });
    if (t) yield { kind: "token", event: t, seq: m.seq, id };
    return;
  }
  for (const event of m.events) {
    if (!isAfter(event, st.last)) {
      // The client already has the end (a reconnect after `complete`): nothing more will come.
      if (event.type === "complete") st.ended = true;
      if (st.ended) return;
      continue;
    }
    st.last = event;
    yield { kind: "event", event, seq: m.seq, id: eventId({ seq: m.seq, version: event.version, index: event.index }) };
    if (event.type === "complete") {
      st.ended = true;
      return;
    }
  }
}

/** Resolves when the signal aborts (never rejects). */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
