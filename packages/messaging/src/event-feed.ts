import { SessionEvent, type Naming } from "@agentmesh/contracts";
import { jetstream, jetstreamManager, type Consumer, type ConsumerMessages } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { decodeValue, parseBoundedJson } from "./decode.js";
import { natsFailure } from "./errors.js";
import { decodeEvents, legacyEvent, type TokenDelta } from "./events.js";
import type { Log } from "./log.js";

/** One message of the events stream: its stream sequence, its session and the events it carries, in order. */
export interface StoredEventBatch {
  /** The message's sequence in `<P>_EVENTS`: the position a client resumes from. */
  readonly seq: number;
  readonly sessionId: string;
  readonly events: readonly SessionEvent[];
  /** The size of the stored message, for buffers that count bytes. */
  readonly bytes: number;
}

/**
 * The events of one stored message, or null when it carries none this reader can use (malformed,
 * or not all of the session its subject names); what was skipped is logged.
 */
function storedBatch(
  naming: Naming,
  m: { subject: string; seq: number; data: Uint8Array },
  log: Log | undefined,
): StoredEventBatch | null {
  const d = decodeEvents(m.data);
  const sid = d.ok ? d.value.events[0]?.session_id : undefined;
  const mismatch = sid !== undefined && (!d.ok || d.value.events.some((e) => e.session_id !== sid));
  if (!d.ok || mismatch || (sid !== undefined && m.subject !== naming.events(sid))) {
    log?.warn(
      { subject: m.subject, seq: m.seq, reason: d.ok ? "session mismatch" : d.reason },
      "skipping a malformed event",
    );
    return null;
  }
  for (const reason of d.value.skipped)
    log?.warn({ subject: m.subject, seq: m.seq, reason }, "skipping a malformed event");
  if (sid === undefined) return null;
  return { seq: m.seq, sessionId: sid, events: d.value.events, bytes: m.data.length };
}

/** A message of the events stream as the feed hands it on: read only when someone wants it. */
export interface FeedMessage {
  readonly seq: number;
  /** The session its subject names. */
  readonly sessionId: string;
  /** Its events, decoded on the first call and kept; null when it carries none this reader can use. */
  read(): StoredEventBatch | null;
}

/** What a feed of every session's events hands on. */
export interface EventFeedHandlers {
  /** Each stored message once, in stream order, as it is stored. */
  readonly events: (m: FeedMessage) => void;
  /** Each live token delta (core NATS: never replayed) of a session `tokensOf` names. */
  readonly token?: (t: TokenDelta) => void;
  /** Whether the deltas of a session are wanted now: the others are not even decoded (default: all are). */
  readonly tokensOf?: (sessionId: string) => boolean;
  /** The feed ended without being stopped (the stream is gone, the connection closed). */
  readonly failed: (err: unknown) => void;
}

/** A running feed; `stop` deletes its consumer on the server. */
export interface EventFeed {
  /** The stream sequence the feed started after (the stream's last message then). */
  readonly startedAfter: number;
  stop(): Promise<void>;
}

/**
 * Follows every session's events through ONE ordered consumer on `<P>_EVENTS` (filter
 * `<p>.events.>`), from the message after the stream's last one, and every token delta through one
 * core subscription on `<p>.tokens.>`. Resolves once the consumer exists: a message stored after
 * that is handed on. An ordered consumer that misses a message is recreated from the last one
 * delivered by the client, so nothing is skipped.
 */
export async function startEventFeed(
  nc: NatsConnection,
  naming: Naming,
  h: EventFeedHandlers,
  log?: Log,
): Promise<EventFeed> {
  const stream = naming.streams.events;
  let consumer: Consumer;
  let messages: ConsumerMessages;
  let startedAfter: number;
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    startedAfter = (await jsm.streams.info(stream)).state.last_seq;
    consumer = await jetstream(nc).consumers.get(stream, {
      filter_subjects: naming.eventsAll,
      opt_start_seq: startedAfter + 1,
    });
    messages = await consumer.consume();
  } catch (err) {
    throw natsFailure(err, `cannot follow the events stream ${stream}`);
  }
  let stopped = false;
  // `<p>.events.<sid>`: the session a message is for, before its payload is read
  const prefix = naming.eventsAll.slice(0, -1);
  void (async () => {
    try {
      for await (const m of messages) {
        const raw = { subject: m.subject, seq: m.seq, data: m.data };
        let read: StoredEventBatch | null | undefined;
        h.events({
          seq: m.seq,
          sessionId: m.subject.slice(prefix.length),
          read: () => (read === undefined ? (read = storedBatch(naming, raw, log)) : read),
        });
      }
      if (!stopped) h.failed(new Error("the events feed ended"));
    } catch (err) {
      if (!stopped) h.failed(natsFailure(err, `the events feed of ${stream} failed`));
    }
  })();
  const tokens = h.token ? subscribeTokens(nc, naming, h.token, h.tokensOf ?? (() => true), log) : null;
  return {
    startedAfter,
    async stop() {
      stopped = true;
      tokens?.unsubscribe();
      messages.stop();
      await consumer.delete().catch(() => false);
    },
  };
}

/** One core subscription for every session's token deltas; malformed ones are skipped. */
function subscribeTokens(
  nc: NatsConnection,
  naming: Naming,
  onToken: (t: TokenDelta) => void,
  wanted: (sessionId: string) => boolean,
  log: Log | undefined,
): Subscription {
  // `<p>.tokens.<sid>`: the session a delta is for, before its payload is read
  const prefix = naming.tokensAll.slice(0, -1);
  return nc.subscribe(naming.tokensAll, {
    callback: (err, m) => {
      if (err || !wanted(m.subject.slice(prefix.length))) return;
      const peek = parseBoundedJson(m.data, "token");
      const d = peek.ok ? decodeValue(legacyEvent(peek.value), SessionEvent, "token", (e) => e) : peek;
      if (d.ok && d.value.type === "token" && m.subject === naming.tokens(d.value.session_id)) onToken(d.value);
      else
        log?.warn(
          { subject: m.subject, reason: d.ok ? "not a token of its subject's session" : d.reason },
          "skipping a malformed token delta",
        );
    },
  });
}

/**
 * A session's stored messages from stream sequence `fromSeq` (inclusive) to the last one stored
 * now, in order, read by direct gets (the events stream allows them): one request per message and
 * no consumer on the server. Malformed messages are skipped.
 */
export async function* readStoredEvents(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  fromSeq: number,
  log?: Log,
): AsyncGenerator<StoredEventBatch, void, undefined> {
  const subject = naming.events(sessionId);
  const stream = naming.streams.events;
  let seq = Math.max(1, fromSeq);
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  for (;;) {
    let m;
    try {
      m = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject });
    } catch (err) {
      throw natsFailure(err, `cannot read the stored events of ${sessionId}`);
    }
    if (m === null) return;
    const b = storedBatch(naming, { subject: m.subject, seq: m.seq, data: m.data }, log);
    if (b && b.sessionId === sessionId) yield b;
    seq = m.seq + 1;
  }
}
