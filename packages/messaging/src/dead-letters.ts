import { headers as makeHeaders, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { Naming } from "@agentmesh/contracts";
import type { Log } from "./log.js";

/** JetStream's advisory when a message ran out of deliveries on a consumer. */
const advisorySubject = (stream: string) => `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.*`;

const H_SUBJECT = "x-original-subject";
const H_SEQ = "x-original-seq";
const H_DELIVERIES = "x-deliveries";

/** One dead letter: a task no agent could finish within its deliveries. */
export interface DeadLetter {
  readonly seq: number;
  readonly subject: string;
  readonly originalSubject: string;
  readonly originalSeq: number;
  readonly deliveries: number;
  readonly taskId: string | null;
  readonly sessionId: string | null;
  readonly at: string;
}

/** Task and session ids from a stored task body (headers may be missing on foreign publishes). */
function idsOf(data: Uint8Array): { taskId: string | null; sessionId: string | null } {
  try {
    const b = JSON.parse(new TextDecoder().decode(data)) as { task_id?: unknown; session_id?: unknown };
    return { taskId: typeof b.task_id === "string" ? b.task_id : null, sessionId: typeof b.session_id === "string" ? b.session_id : null };
  } catch {
    return { taskId: null, sessionId: null };
  }
}

/** Moves one exhausted task from the task stream to the dead-letter stream; idempotent per sequence. */
async function moveToDead(jsm: JetStreamManager, nc: NatsConnection, naming: Naming, seq: number, deliveries: number, log: Log): Promise<void> {
  let msg;
  try {
    msg = await jsm.streams.getMessage(naming.streams.tasks, { seq });
  } catch {
    return; // already moved (another coordinator) or acked after all
  }
  if (!msg) return;
  const role = msg.subject.split(".").at(-2) ?? "unknown";
  const h = makeHeaders();
  for (const [k, v] of msg.header ? [...msg.header] : []) for (const one of v) h.append(k, one);
  h.set(H_SUBJECT, msg.subject);
  h.set(H_SEQ, String(seq));
  h.set(H_DELIVERIES, String(deliveries));
  await jetstream(nc).publish(naming.deadLetter(role), msg.data, { msgID: `dead:${naming.streams.tasks}:${seq}`, headers: h });
  await jsm.streams.deleteMessage(naming.streams.tasks, seq, false).catch(() => false);
  log.warn({ seq, subject: msg.subject, deliveries }, "task dead-lettered: no agent finished it within its deliveries");
}

/**
 * Watches MAX_DELIVERIES advisories for the task stream and moves each exhausted task to the
 * dead-letter stream (a work-queue stream would otherwise keep it forever). Run by every
 * coordinator in one queue group, so each advisory is handled once.
 */
export async function startDeadLetterMover(nc: NatsConnection, opts: { naming: Naming; log: Log }): Promise<{ stop(): Promise<void> }> {
  const jsm = await jetstreamManager(nc);
  const sub: Subscription = nc.subscribe(advisorySubject(opts.naming.streams.tasks), { queue: `${opts.naming.prefix}-dead-letters` });
  const loop = (async () => {
    for await (const m of sub) {
      try {
        const a = m.json<{ stream_seq?: number; deliveries?: number }>();
        if (typeof a.stream_seq === "number") await moveToDead(jsm, nc, opts.naming, a.stream_seq, a.deliveries ?? 0, opts.log);
      } catch (err) {
        opts.log.warn({ err }, "dead-letter move failed");
      }
    }
  })();
  return {
    async stop() {
      await sub.drain();
      await loop;
    },
  };
}

/** Lists dead letters (oldest first, at most `limit`). */
export async function listDeadLetters(nc: NatsConnection, naming: Naming, limit = 100): Promise<DeadLetter[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(naming.streams.dead);
  const out: DeadLetter[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && out.length < limit; seq++) {
    const m = await jsm.streams.getMessage(naming.streams.dead, { seq }).catch(() => null);
    if (!m) continue;
    out.push({
      seq,
      subject: m.subject,
      originalSubject: m.header?.get(H_SUBJECT) ?? "",
      originalSeq: Number(m.header?.get(H_SEQ) ?? 0),
      deliveries: Number(m.header?.get(H_DELIVERIES) ?? 0),
      ...idsOf(m.data),
      at: m.time.toISOString(),
    });
  }
  return out;
}

/**
 * Re-drives a dead letter: publishes its task again to its original subject and removes it
 * from the dead-letter stream. If the session has moved on (a deadline re-dispatched a new
 * attempt), the result of the re-driven attempt is dropped as not awaited — harmless.
 */
export async function redriveDeadLetter(nc: NatsConnection, naming: Naming, seq: number): Promise<DeadLetter | null> {
  const jsm = await jetstreamManager(nc);
  const m = await jsm.streams.getMessage(naming.streams.dead, { seq }).catch(() => null);
  if (!m) return null;
  const original = m.header?.get(H_SUBJECT) ?? "";
  if (!original.startsWith(`${naming.prefix}.task.`)) throw new Error(`dead letter ${seq} has no task subject`);
  const h = makeHeaders();
  for (const [k, v] of m.header ? [...m.header] : []) if (![H_SUBJECT, H_SEQ, H_DELIVERIES, "Nats-Msg-Id"].includes(k)) for (const one of v) h.append(k, one);
  await jetstream(nc).publish(original, m.data, { msgID: `redrive:${seq}`, headers: h });
  await jsm.streams.deleteMessage(naming.streams.dead, seq, false);
  return {
    seq,
    subject: m.subject,
    originalSubject: original,
    originalSeq: Number(m.header?.get(H_SEQ) ?? 0),
    deliveries: Number(m.header?.get(H_DELIVERIES) ?? 0),
    ...idsOf(m.data),
    at: m.time.toISOString(),
  };
}
