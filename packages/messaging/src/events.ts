import { compiled, EventBatchEnvelope, formatZodError, SessionEvent, type Naming } from "@agentmesh/contracts";
import { jetstream, type Consumer, type ConsumerMessages } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { decodeValue, parseBoundedJson, type Decoded } from "./decode.js";
import { natsFailure } from "./errors.js";
import type { Log } from "./log.js";

/** Options of followEvents. */
export interface FollowEventsOptions {
  /** Ends the iteration when aborted. */
  readonly signal?: AbortSignal;
  /** Malformed events are skipped; with a log they are also reported. */
  readonly log?: Log;
}

/**
 * An event as this release reads it: one written by the previous release names its time `at`
 * (same value, epoch ms); it is read as `timestamp`. Stored events age out of the events stream
 * (its max age), so the next release drops this.
 */
export function legacyEvent(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || "timestamp" in raw || !("at" in raw)) return raw;
  const { at, ...rest } = raw as Record<string, unknown>;
  return { ...rest, timestamp: at };
}

/** The events of one message on `<p>.events.<sid>`, and why any of them could not be read. */
export interface DecodedEvents {
  readonly events: SessionEvent[];
  /** One reason per event of a batch that was skipped (its schema, or another session or version than the batch's). */
  readonly skipped: string[];
}

/**
 * The events one message on `<p>.events.<sid>` carries, in order: an `EventBatch` (one transition's
 * events), or one bare `SessionEvent` as written before batches existed. The message is checked like
 * every message (size, depth, schema version); a batch's wrapper, then each event on its own, so an
 * event this reader cannot read (a newer type) is skipped without the others of its transition.
 */
export function decodeEvents(data: Uint8Array): Decoded<DecodedEvents> {
  const peek = parseBoundedJson(data, "event message");
  if (!peek.ok) return peek;
  const batch = typeof peek.value === "object" && peek.value !== null && "events" in peek.value;
  if (!batch) return decodeValue(legacyEvent(peek.value), SessionEvent, "event", (e) => ({ events: [e], skipped: [] }));
  const env = decodeValue(peek.value, EventBatchEnvelope, "event batch", (b) => b);
  if (!env.ok) return env;
  const out: DecodedEvents = { events: [], skipped: [] };
  for (const [i, raw] of env.value.events.entries()) {
    const e = compiled(SessionEvent).safeParse(legacyEvent(raw));
    if (!e.success) out.skipped.push(`event ${i} of the batch: ${formatZodError(e.error)}`);
    else if (e.data.session_id !== env.value.session_id || e.data.version !== env.value.version)
      out.skipped.push(`event ${i} of the batch belongs to ${e.data.session_id} v${e.data.version}`);
    else out.events.push(e.data);
  }
  return { ok: true, value: out };
}

/**
 * Replays a session's events from the EVENTS stream from the start, then follows live ones,
 * until the signal aborts or the caller stops iterating. Malformed events are skipped.
 *
 * It reads through an ordered consumer of its own, which it deletes on the server when it ends:
 * stopping one only stops the client's pulls, and the server would keep it for its inactivity
 * threshold (five minutes). An abort while the consumer is being created ends the iteration as
 * soon as the create answers, and that consumer is deleted too.
 */
export async function* followEvents(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  opts: FollowEventsOptions = {},
): AsyncGenerator<SessionEvent, void, undefined> {
  const signal = opts.signal;
  if (signal?.aborted) return;
  // Listened to before anything is awaited, so an abort during the set-up is not missed.
  let messages: ConsumerMessages | null = null;
  const onAbort = () => messages?.stop();
  signal?.addEventListener("abort", onAbort, { once: true });
  let consumer: Consumer | null = null;
  try {
    try {
      // an ordered consumer with a single filter string: the array form needs server 2.10
      consumer = await jetstream(nc).consumers.get(naming.streams.events, {
        filter_subjects: naming.events(sessionId),
      });
      if (signal?.aborted) return;
      messages = await consumer.consume();
    } catch (err) {
      throw natsFailure(err, `cannot follow events of ${sessionId}`);
    }
    if (signal?.aborted) return;
    yield* sessionEvents(messages, sessionId, opts.log);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    messages?.stop();
    // best effort: a consumer that cannot be deleted now lapses at its inactivity threshold
    await consumer?.delete().catch(() => false);
  }
}

/** The events of one session's messages, each once, skipping (and reporting) malformed ones. */
async function* sessionEvents(
  messages: ConsumerMessages,
  sessionId: string,
  log: Log | undefined,
): AsyncGenerator<SessionEvent, void, undefined> {
  // The highest index yielded per version: an event seen again (a batch re-published after an
  // earlier version's crash left some of its events out bare) is not handed out twice.
  const seen = new Map<number, number>();
  for await (const m of messages) {
    const d = decodeEvents(m.data);
    if (!d.ok || d.value.events.some((e) => e.session_id !== sessionId)) {
      log?.warn(
        { subject: m.subject, seq: m.seq, reason: d.ok ? "session mismatch" : d.reason },
        "skipping a malformed event",
      );
      continue;
    }
    for (const reason of d.value.skipped)
      log?.warn({ subject: m.subject, seq: m.seq, reason }, "skipping a malformed event");
    for (const e of d.value.events) {
      if (e.index <= (seen.get(e.version) ?? -1)) {
        log?.debug(
          { subject: m.subject, seq: m.seq, version: e.version, index: e.index },
          "skipping an event already delivered",
        );
        continue;
      }
      seen.set(e.version, e.index);
      yield e;
    }
  }
}

/** A token delta as `<p>.tokens.<sid>.<role>` carries it. */
export type TokenDelta = Extract<SessionEvent, { type: "token" }>;

/** Decides which token deltas a client shows; see `createTokenDedup`. */
export interface TokenDedup {
  /**
   * The delta to show, or null when the client has all of its text already: the delta as it came,
   * or only its part past what was shown of its task (a redelivered task streaming again).
   */
  admit(t: TokenDelta): TokenDelta | null;
}

/**
 * The de-duplication rule for token deltas, per task_id. With an `offset` (where the delta starts
 * in its task's text): remember how far the shown text reaches; a delta that ends at or before it
 * is dropped, one that starts before it and ends past it is cut to the new part, one that starts
 * past it is shown whole (a delta was lost on the way; the `complete` event is the truth). Without
 * one (older publishers), by `seq`: a delta at or below the highest seq shown is dropped. A
 * redelivery that writes different text can therefore splice two runs' text: tokens are a preview,
 * never the answer.
 */
export function createTokenDedup(): TokenDedup {
  const reach = new Map<string, number>();
  const next = new Map<string, number>();
  return {
    admit(t) {
      if (t.offset !== undefined) {
        const shown = reach.get(t.task_id) ?? 0;
        const end = t.offset + t.delta.length;
        if (end <= shown) return null;
        reach.set(t.task_id, Math.max(shown, end));
        return t.offset >= shown ? t : { ...t, offset: shown, delta: t.delta.slice(shown - t.offset) };
      }
      if (t.seq === undefined) return t;
      if (t.seq < (next.get(t.task_id) ?? 0)) return null;
      next.set(t.task_id, t.seq + 1);
      return t;
    },
  };
}

/**
 * True when a token delta came on its own session's and role's subject: the role in the subject is
 * what the publisher's rights prove, so a delta naming another role is not trusted.
 */
export function onItsSubject(naming: Naming, subject: string, t: TokenDelta): boolean {
  return t.role !== undefined && subject === `${naming.tokensAll.slice(0, -1)}${t.session_id}.${t.role}`;
}

/**
 * Calls `onToken` with each live token delta of a session (a core subscription: nothing is replayed) until
 * the returned function is called. Malformed or foreign deltas are skipped, and so is a delta
 * already delivered (`createTokenDedup`): a redelivered task does not show its text twice.
 */
export function followTokens(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  onToken: (t: TokenDelta) => void,
  log?: Log,
): () => void {
  const dedup = createTokenDedup();
  const sub = nc.subscribe(naming.sessionTokens(sessionId), {
    callback: (err, m) => {
      if (err) return;
      // a delta from an agent of the previous release (`at`) is read too
      const peek = parseBoundedJson(m.data, "token");
      const d = peek.ok ? decodeValue(legacyEvent(peek.value), SessionEvent, "token", (e) => e) : peek;
      if (
        d.ok &&
        d.value.type === "token" &&
        d.value.session_id === sessionId &&
        onItsSubject(naming, m.subject, d.value)
      ) {
        const shown = dedup.admit(d.value);
        if (shown) onToken(shown);
      } else
        log?.warn(
          { subject: m.subject, reason: d.ok ? "not a token of its subject's session and role" : d.reason },
          "skipping a malformed token delta",
        );
    },
  });
  return () => sub.unsubscribe();
}
