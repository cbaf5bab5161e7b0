import type { Naming, SessionEvent } from "@agentmesh/contracts";
import { followEvents, followTokens, type Log, type TokenDelta } from "@agentmesh/messaging";
import type { NatsConnection } from "@nats-io/transport-node";

/** Where a client is in a session's events: the `<version>:<index>` of the last one it saw. */
export interface EventCursor {
  readonly version: number;
  readonly index: number;
}

/** The SSE id of an event. Token deltas have none: they are live only. */
export const eventId = (e: EventCursor): string => `${e.version}:${e.index}`;

/** Parses a `Last-Event-ID`; null when absent, undefined when malformed. */
export function parseEventId(raw: string | undefined | null): EventCursor | null | undefined {
  if (raw === undefined || raw === null || raw === "") return null;
  const m = /^(\d{1,15}):(\d{1,9})$/.exec(raw.trim());
  if (!m) return undefined;
  return { version: Number(m[1]), index: Number(m[2]) };
}

/** True when `e` comes after `c` in the session's order (versions, then indexes within one). */
export const isAfter = (e: EventCursor, c: EventCursor | null): boolean =>
  c === null || e.version > c.version || (e.version === c.version && e.index > c.index);

/** One thing to send: a stored event (with an id) or a live token delta (without). */
export type StreamItem =
  { readonly kind: "event"; readonly event: SessionEvent } | { readonly kind: "token"; readonly event: TokenDelta };

export interface SessionStreamOptions {
  /** Only events after this one (exclusive); null = from the first. */
  readonly after: EventCursor | null;
  /** Also live token deltas. */
  readonly tokens: boolean;
  readonly signal: AbortSignal;
  readonly log?: Log;
}

/**
 * A session's events from `<P>_EVENTS` after the cursor, then live ones, merged with its live
 * token deltas, until the `complete` event (included; at once when the cursor is at or past it)
 * or the signal. Events are strictly increasing by (version, index): a copy the broker holds
 * twice (published again after its de-dup window) is skipped, so a client never sees one twice.
 * No replica keeps a buffer of its own: every replica reads the same stream, so a client may
 * reconnect to any of them.
 */
export async function* sessionStream(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  o: SessionStreamOptions,
): AsyncGenerator<StreamItem, void, undefined> {
  const queue: Array<StreamItem | { kind: "end" } | { kind: "fail"; err: unknown }> = [];
  let wake: (() => void) | null = null;
  const push = (x: (typeof queue)[number]) => {
    queue.push(x);
    wake?.();
    wake = null;
  };
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  o.signal.addEventListener("abort", onAbort, { once: true });
  // One listener for the life of the stream (one per wait would pile up on a long session).
  stop.signal.addEventListener(
    "abort",
    () => {
      wake?.();
      wake = null;
    },
    { once: true },
  );
  const untokens = o.tokens
    ? followTokens(nc, naming, sessionId, (t) => push({ kind: "token", event: t }), o.log)
    : () => {};
  void (async () => {
    try {
      for await (const e of followEvents(nc, naming, sessionId, {
        signal: stop.signal,
        ...(o.log ? { log: o.log } : {}),
      }))
        push({ kind: "event", event: e });
      push({ kind: "end" });
    } catch (err) {
      push({ kind: "fail", err });
    }
  })();
  let last = o.after;
  try {
    while (!stop.signal.aborted) {
      const item = queue.shift();
      if (item === undefined) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        continue;
      }
      if (item.kind === "end") return;
      if (item.kind === "fail") throw item.err;
      if (item.kind === "token") {
        yield item;
        continue;
      }
      if (!isAfter(item.event, last)) {
        // The client already has the end (a reconnect after `complete`): nothing more will come.
        if (item.event.type === "complete") return;
        continue;
      }
      last = item.event;
      yield item;
      if (item.event.type === "complete") return;
    }
  } finally {
    untokens();
    stop.abort();
    o.signal.removeEventListener("abort", onAbort);
  }
}
