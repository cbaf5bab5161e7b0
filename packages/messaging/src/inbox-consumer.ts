import { AgentmeshError, InboxInput, type Naming } from "@agentmesh/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import { INBOX_DEAD, moveToDeadLetters } from "./dead-letters.js";
import { decodeMessage, retryDelayMs } from "./decode.js";
import type { Log } from "./log.js";
import { senderMismatch } from "./senders.js";
import { getDurable, startPullLoop, type InFlight } from "./pull-loop.js";
import type { CrashHook, InboxHandler, Worker, WorkStats } from "./types.js";

/** Settings of a coordinator's inbox consumer. */
export interface InboxConsumerOptions {
  readonly naming: Naming;
  /** Inbox messages handled at once (different sessions; the CAS serialises one session). */
  readonly concurrency: number;
  /** The `coordinator` consumer's ack_wait; working() is sent every third of it. */
  readonly ackWaitMs: number;
  readonly handler: InboxHandler;
  readonly log: Log;
  readonly crash?: CrashHook;
}

/** A short retry: an inbox retry is usually a CAS conflict or a brief Redis outage. */
const inboxRetryDelay = (deliveryCount: number) => retryDelayMs(deliveryCount, { baseMs: 100, capMs: 5000 });

/** What the inbox consumer's handling shares: its settings and counters. */
interface InboxState {
  readonly nc: NatsConnection;
  readonly naming: Naming;
  readonly stream: string;
  readonly what: { stream: string; consumer: string };
  readonly log: Log;
  readonly handler: InboxHandler;
  readonly crash: CrashHook;
  /** The consumer's max_deliver (infinite when unlimited). */
  readonly maxDeliver: number;
  readonly counts: {
    processed: number;
    failed: number;
    redelivered: number;
    dropped: number;
    dead_lettered: number;
    forged: number;
  };
}

/** Consumes the shared session inbox on the `coordinator` durable consumer. */
export async function startInboxConsumer(nc: NatsConnection, opts: InboxConsumerOptions): Promise<Worker> {
  const { naming, log } = opts;
  const stream = naming.streams.inbox;
  const durable = naming.consumers.coordinator;
  const what = { stream, consumer: durable };
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new AgentmeshError("internal", `inbox concurrency must be a positive integer, got ${opts.concurrency}`);
  }
  const { consumer, info } = await getDurable(nc, stream, durable);
  const serverAckWaitMs = info.config.ack_wait ? Math.floor(info.config.ack_wait / 1_000_000) : opts.ackWaitMs;
  const ackWaitMs = Math.min(serverAckWaitMs, opts.ackWaitMs);
  // 0 or -1 means unlimited deliveries: then nothing is ever the last one
  const maxDeliver =
    info.config.max_deliver && info.config.max_deliver > 0 ? info.config.max_deliver : Number.POSITIVE_INFINITY;
  const counts = { processed: 0, failed: 0, redelivered: 0, dropped: 0, dead_lettered: 0, forged: 0 };
  const state: InboxState = {
    nc,
    naming,
    stream,
    what,
    log,
    handler: opts.handler,
    crash: opts.crash ?? (() => undefined),
    maxDeliver,
    counts,
  };

  const loop = startPullLoop({
    nc,
    consumer,
    concurrency: opts.concurrency,
    heartbeatMs: Math.max(100, Math.floor(ackWaitMs / 3)),
    log,
    what,
    handle: (entry) => handleInput(state, entry),
  });
  log.info(
    { ...what, concurrency: opts.concurrency, ack_wait_ms: ackWaitMs, max_deliver: maxDeliver },
    "inbox consumer started",
  );

  return {
    get stats(): WorkStats {
      return { ...counts, in_flight: loop.inFlight() };
    },
    alive: () => loop.alive(),
    async stop(graceMs) {
      await loop.stop(graceMs);
      log.info({ ...what, ...counts }, "inbox consumer stopped");
    },
  };
}

/**
 * Inbox inputs are never dropped silently: one that can never be applied, or that failed its
 * last delivery, is copied to `<p>.dead.inbox` (session id in the headers, for `sessions --stuck`
 * and a re-drive) and then termed. If even that publish fails, it is nak'd to try again.
 */
async function deadLetter(s: InboxState, entry: InFlight, reason: string): Promise<boolean> {
  const r = await moveToDeadLetters(s.nc, s.naming, INBOX_DEAD, s.stream, entry, reason, inboxRetryDelay);
  if (r.moved) s.counts.dead_lettered++;
  else if (r.err !== undefined)
    s.log.error(
      { ...s.what, seq: entry.msg.seq, err: r.err, delay_ms: r.delayMs },
      "cannot dead-letter an inbox input; retrying later",
    );
  return r.moved;
}

/** One delivery: a readable input from a sender that may write it is handed to the handler, then settled. */
async function handleInput(s: InboxState, entry: InFlight): Promise<void> {
  const deliveryCount = entry.msg.info.deliveryCount;
  if (deliveryCount > 1) s.counts.redelivered++;
  const input = await readInput(s, entry);
  if (input === null) return;
  const ilog = {
    ...s.what,
    session_id: input.session_id,
    input_id: input.input_id,
    kind: input.kind,
    delivery: deliveryCount,
  };
  let verdict: "ack" | "retry" | "error";
  try {
    verdict = await s.handler(input, { deliveryCount, signal: entry.controller.signal });
  } catch (err) {
    s.log.error({ ...ilog, err }, "inbox handler threw; nak with delay");
    verdict = "error";
  }
  return settleVerdict(s, entry, ilog, verdict);
}

/**
 * The delivery's input, or null once it was settled instead: a forged one is termed, an
 * unreadable or misrouted one dead-lettered.
 */
async function readInput(s: InboxState, entry: InFlight): Promise<InboxInput | null> {
  const { naming, log, what, counts } = s;
  const m = entry.msg;
  const d = decodeMessage(m.data, InboxInput, "inbox input");
  let reason = d.ok ? null : d.reason;
  if (d.ok) {
    const sender = naming.inboxSender(m.subject);
    if (sender === null || !m.subject.startsWith(`${naming.prefix}.inbox.${d.value.session_id}.`)) {
      reason = `inbox input for session ${d.value.session_id} arrived on ${m.subject}`;
    } else {
      const forged = senderMismatch(d.value, sender);
      if (forged !== null) {
        // Not a lost input but one its sender may not write: dropped, logged and counted, and
        // kept out of the dead letters so a forger cannot make a session look stuck.
        counts.forged++;
        counts.dropped++;
        entry.settled = true;
        m.term();
        log.warn(
          { ...what, subject: m.subject, seq: m.seq, session_id: d.value.session_id, reason: forged },
          "dropped an inbox input its sender may not write",
        );
        return null;
      }
    }
  }
  if (!d.ok || reason !== null) {
    counts.dropped++;
    if (await deadLetter(s, entry, reason ?? "unreadable")) {
      log.warn(
        { ...what, subject: m.subject, seq: m.seq, reason },
        "dead-lettered an inbox message that can never be processed",
      );
    }
    return null;
  }
  return d.value;
}

/** Acks an applied input; otherwise naks it for a retry, or dead-letters it after its last delivery. */
async function settleVerdict(
  s: InboxState,
  entry: InFlight,
  ilog: Record<string, string | number>,
  verdict: "ack" | "retry" | "error",
): Promise<void> {
  const m = entry.msg;
  const deliveryCount = m.info.deliveryCount;
  if (entry.settled) return;
  if (verdict === "ack") {
    s.crash("before-ack");
    if (entry.settled) return;
    entry.settled = true;
    s.counts.processed++;
    // A plain ack, not a confirmed one: a lost ack only means a redelivery, which the applied
    // marker turns into a no-op, and waiting for the server's confirmation cost a request per input.
    m.ack();
    return;
  }
  if (verdict === "error") s.counts.failed++;
  if (deliveryCount >= s.maxDeliver) {
    const why = `not applied after ${deliveryCount} deliveries (last: ${verdict === "error" ? "the handler failed" : "the handler asked for a retry"})`;
    if (await deadLetter(s, entry, why))
      s.log.error(
        { ...ilog, reason: why },
        "inbox input dead-lettered: the session may be stuck until it is re-driven",
      );
    return;
  }
  entry.settled = true;
  const delay = inboxRetryDelay(deliveryCount);
  s.log.debug({ ...ilog, delay_ms: delay, verdict }, "inbox input left for redelivery");
  m.nak(delay);
}
