import { SessionEvent, type Naming } from "@agentmesh/contracts";
import { jetstream, jetstreamManager, type Consumer, type ConsumerMessages } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { decodeValue, parseBoundedJson } from "./decode.js";
import { natsFailure } from "./errors.js";
import { decodeEvents, legacyEvent, onItsSubject, type TokenDelta } from "./events.js";
import type { Log } from "./log.js";

/** One message of the events stream: its stream sequence, its session and the events it carries, in order. */
export interface StoredEventBatch {
  readonly kind: "events";
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
  return { kind: "events", seq: m.seq, sessionId: sid, events: d.value.events, bytes: m.data.length };
}

/** One token delta of the events stream (`<p>.tokens.<sid>.<role>`), with its stream sequence. */
export interface StoredToken {
  readonly kind: "token";
  readonly seq: number;
  readonly sessionId: string;
  readonly token: TokenDelta;
  readonly bytes: number;
}

/** A message of the events stream: a batch of lifecycle events or a token delta, in one order. */
export type StoredMessage = StoredEventBatch | StoredToken;

/** The token of one stored message, or null (logged) when it is malformed or not its subject's session and role. */
function storedToken(m: { subject: string; seq: number; data: Uint8Array }, naming: Naming, log: Log | undefined) {
  const peek = parseBoundedJson(m.data, "token");
  const d = peek.ok ? decodeValue(legacyEvent(peek.value), SessionEvent, "token", (e) => e) : peek;
  if (d.ok && d.value.type === "token" && onItsSubject(naming, m.subject, d.value)) {
    const t: StoredToken = {
      kind: "token",
      seq: m.seq,
      sessionId: d.value.session_id,
      token: d.value,
      bytes: m.data.length,
    };
    return t;
  }
  log?.warn(
    { subject: m.subject, seq: m.seq, reason: d.ok ? "not a token of its subject's session and role" : d.reason },
    "skipping a malformed token delta",
  );
  return null;
}

/** What a subject of the events stream holds and for which session; null for a subject of neither kind. */
function subjectOf(naming: Naming, subject: string): { kind: "events" | "token"; sessionId: string } | null {
  const ev = naming.eventsAll.slice(0, -1);
  const tok = naming.tokensAll.slice(0, -1);
  if (subject.startsWith(ev)) return { kind: "events", sessionId: subject.slice(ev.length) };
  if (!subject.startsWith(tok)) return null;
  const rest = subject.slice(tok.length);
  const dot = rest.indexOf(".");
  return dot > 0 ? { kind: "token", sessionId: rest.slice(0, dot) } : null;
}

/** A stored message decoded by its subject's kind; null when it carries nothing this reader can use. */
function storedMessage(
  naming: Naming,
  m: { subject: string; seq: number; data: Uint8Array },
  log: Log | undefined,
): StoredMessage | null {
  const at = subjectOf(naming, m.subject);
  if (at === null) return null;
  return at.kind === "events" ? storedBatch(naming, m, log) : storedToken(m, naming, log);
}

/** A message of the events stream as the feed hands it on: read only when someone wants it. */
export interface FeedMessage {
  readonly seq: number;
  /** What its subject says it holds. */
  readonly kind: "events" | "token";
  /** The session its subject names. */
  readonly sessionId: string;
  /** Its content, decoded on the first call and kept; null when it carries nothing this reader can use. */
  read(): StoredMessage | null;
}

/** What a feed of every session's events hands on. */
export interface EventFeedHandlers {
  /** Each stored message (lifecycle events and token deltas) once, in stream order, as it is stored. */
  readonly message: (m: FeedMessage) => void;
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
 * Follows every session's events and token deltas through ONE ordered consumer on `<P>_EVENTS`
 * (no filter: the stream holds only those two kinds), from the message after the stream's last
 * one. Resolves once the consumer exists: a message stored after that is handed on. An ordered
 * consumer that misses a message is recreated from the last one delivered by the client, so
 * nothing is skipped.
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
    consumer = await jetstream(nc).consumers.get(stream, { opt_start_seq: startedAfter + 1 });
    messages = await consumer.consume();
  } catch (err) {
    throw natsFailure(err, `cannot follow the events stream ${stream}`);
  }
  let stopped = false;
  void (async () => {
    try {
      for await (const m of messages) {
        const at = subjectOf(naming, m.subject);
        if (at === null) continue;
        const raw = { subject: m.subject, seq: m.seq, data: m.data };
        let read: StoredMessage | null | undefined;
        h.message({
          seq: m.seq,
          kind: at.kind,
          sessionId: at.sessionId,
          read: () =>
            read === undefined
              ? (read = at.kind === "events" ? storedBatch(naming, raw, log) : storedToken(raw, naming, log))
              : read,
        });
      }
      if (!stopped) h.failed(new Error("the events feed ended"));
    } catch (err) {
      if (!stopped) h.failed(natsFailure(err, `the events feed of ${stream} failed`));
    }
  })();
  return {
    startedAfter,
    async stop() {
      stopped = true;
      messages.stop();
      await consumer.delete().catch(() => false);
    },
  };
}

/**
 * A session's stored messages from stream sequence `fromSeq` (inclusive) to the last one stored
 * now, in order: its lifecycle events and, with `tokens`, its token deltas merged by sequence. Read
 * by direct gets (the events stream allows them): one request per message and no consumer on the
 * server. Malformed messages are skipped.
 */
export async function* readStoredEvents(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  fromSeq: number,
  log?: Log,
  o: { tokens?: boolean } = {},
): AsyncGenerator<StoredMessage, void, undefined> {
  const stream = naming.streams.events;
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  /** The next stored message on `subject` at or after `seq`, or null at the end. */
  const next = async (subject: string, seq: number) => {
    try {
      return await jsm.direct.getMessage(stream, { seq: Math.max(1, seq), next_by_subj: subject });
    } catch (err) {
      throw natsFailure(err, `cannot read the stored events of ${sessionId}`);
    }
  };
  const subjects = [naming.events(sessionId), ...(o.tokens === true ? [naming.sessionTokens(sessionId)] : [])];
  // one cursor per subject, merged by sequence
  const heads = await Promise.all(subjects.map((s) => next(s, fromSeq)));
  for (;;) {
    let at = -1;
    heads.forEach((h, i) => {
      if (h && (at < 0 || h.seq < heads[at]!.seq)) at = i;
    });
    const m = at < 0 ? null : heads[at]!;
    if (m === null) return;
    const b = storedMessage(naming, { subject: m.subject, seq: m.seq, data: m.data }, log);
    if (b && b.sessionId === sessionId) yield b;
    heads[at] = await next(subjects[at]!, m.seq + 1);
  }
}
