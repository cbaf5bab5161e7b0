import { AgentmeshError, HEADERS, parseTaskId, SessionId, TaskId, type Naming } from "@agentmesh/contracts";
import { headers as makeHeaders, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { Log } from "./log.js";
import type { InFlight } from "./pull-loop.js";
import { readHeader } from "./trace.js";

/** JetStream's advisory when a message ran out of deliveries on a consumer. */
const advisorySubject = (stream: string) => `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.*`;

const H_SUBJECT = "x-original-subject";
const H_SEQ = "x-original-seq";
const H_DELIVERIES = "x-deliveries";
const H_REASON = "x-dead-reason";

/** The dead-letter subject token of inbox inputs (`<p>.dead.inbox`); task dead letters use their role. */
export const INBOX_DEAD = "inbox";

/** One dead letter: a task no agent could finish, or an inbox input no coordinator could apply. */
export interface DeadLetter {
  readonly seq: number;
  readonly subject: string;
  /** `task` for a task no agent finished, `inbox` for an inbox input no coordinator applied. */
  readonly kind: "task" | "inbox";
  readonly originalSubject: string;
  readonly originalSeq: number;
  readonly deliveries: number;
  readonly taskId: string | null;
  readonly sessionId: string | null;
  /** Why it was dead-lettered, when a consumer said so (advisory moves leave it null). */
  readonly reason: string | null;
  readonly at: string;
}

/**
 * Task and session ids of a message we could not decode: from our headers, else from a lenient
 * read of the body. Each must be well formed and agree with the other; otherwise null.
 */
export function recoverIds(
  data: Uint8Array,
  h: MsgHdrs | undefined,
): { taskId: string | null; sessionId: string | null } {
  let taskId = readHeader(h, HEADERS.taskId) ?? null;
  let sessionId = readHeader(h, HEADERS.sessionId) ?? null;
  if (taskId === null || sessionId === null) {
    try {
      const b: unknown = JSON.parse(new TextDecoder().decode(data));
      if (typeof b === "object" && b !== null) {
        const o = b as { task_id?: unknown; session_id?: unknown };
        taskId ??= typeof o.task_id === "string" ? o.task_id : null;
        sessionId ??= typeof o.session_id === "string" ? o.session_id : null;
      }
    } catch {
      // not JSON: the headers are all there is
    }
  }
  const task = taskId !== null && TaskId.safeParse(taskId).success ? parseTaskId(taskId) : null;
  if (task && sessionId === null) sessionId = task.sessionId;
  if (sessionId !== null && !SessionId.safeParse(sessionId).success) sessionId = null;
  if (task && task.sessionId !== sessionId) return { taskId: null, sessionId };
  return { taskId: task ? taskId : null, sessionId };
}

/**
 * JetStream's own headers (`Nats-Msg-Id`, `Nats-Expected-Stream`, …) are instructions for the
 * original publish: copied onto a dead letter they would make the server refuse it.
 */
const isServerHeader = (name: string) => name.toLowerCase().startsWith("nats-");

/** What a dead letter is made of. */
export interface DeadLetterInput {
  readonly stream: string;
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers?: MsgHdrs | undefined;
  readonly deliveries: number;
  readonly reason?: string;
}

/**
 * Publishes a copy of a message to `<p>.dead.<token>` with where it came from, why, and the
 * session id in the headers. Idempotent per stream sequence (msg id `dead:<stream>:<seq>`).
 */
export async function publishDeadLetter(
  nc: NatsConnection,
  naming: Naming,
  token: string,
  m: DeadLetterInput,
): Promise<void> {
  const h = makeHeaders();
  for (const [k, v] of m.headers ? [...m.headers] : []) if (!isServerHeader(k)) for (const one of v) h.append(k, one);
  const ids = recoverIds(m.data, m.headers);
  if (ids.sessionId !== null) h.set(HEADERS.sessionId, ids.sessionId);
  h.set(H_SUBJECT, m.subject);
  h.set(H_SEQ, String(m.seq));
  h.set(H_DELIVERIES, String(m.deliveries));
  // headers are one line each
  if (m.reason) h.set(H_REASON, m.reason.replace(/[\r\n]+/g, " ").slice(0, 500));
  await jetstream(nc).publish(naming.deadLetter(token), m.data, { msgID: `dead:${m.stream}:${m.seq}`, headers: h });
}

/** The dead-letter token for a message stored on `subject`: its role for a task, `inbox` for an inbox input. */
function tokenFor(naming: Naming, subject: string): string {
  if (subject.startsWith(`${naming.prefix}.inbox.`)) return INBOX_DEAD;
  return subject.split(".").at(-2) ?? "unknown";
}

/** Moves one exhausted message from its work-queue stream to the dead-letter stream; idempotent per sequence. */
async function moveToDead(
  jsm: JetStreamManager,
  nc: NatsConnection,
  naming: Naming,
  stream: string,
  seq: number,
  deliveries: number,
  log: Log,
): Promise<void> {
  let msg;
  try {
    msg = await jsm.streams.getMessage(stream, { seq });
  } catch {
    return; // already moved (another coordinator) or acked after all
  }
  if (!msg) return;
  await publishDeadLetter(nc, naming, tokenFor(naming, msg.subject), {
    stream,
    seq,
    subject: msg.subject,
    data: msg.data,
    headers: msg.header,
    deliveries,
  });
  await jsm.streams.deleteMessage(stream, seq, false).catch(() => false);
  log.warn(
    { stream, seq, subject: msg.subject, deliveries },
    "dead-lettered: no consumer finished it within its deliveries",
  );
}

/**
 * Watches MAX_DELIVERIES advisories for the task and inbox streams and moves each exhausted
 * message to the dead-letter stream (a work-queue stream would otherwise keep it forever). Run
 * by every coordinator in one queue group, so each advisory is handled once.
 */
export async function startDeadLetterMover(
  nc: NatsConnection,
  opts: { naming: Naming; log: Log },
): Promise<{ stop(): Promise<void> }> {
  const jsm = await jetstreamManager(nc);
  const { naming } = opts;
  const subs: Subscription[] = [naming.streams.tasks, naming.streams.inbox].map((stream) =>
    nc.subscribe(advisorySubject(stream), { queue: `${naming.prefix}-dead-letters` }),
  );
  const loops = subs.map((sub) =>
    (async () => {
      for await (const m of sub) {
        try {
          const a = m.json<{ stream?: string; stream_seq?: number; deliveries?: number }>();
          const stream = a.stream === naming.streams.inbox ? naming.streams.inbox : naming.streams.tasks;
          if (typeof a.stream_seq === "number")
            await moveToDead(jsm, nc, naming, stream, a.stream_seq, a.deliveries ?? 0, opts.log);
        } catch (err) {
          opts.log.warn({ err }, "dead-letter move failed");
        }
      }
    })(),
  );
  return {
    async stop() {
      for (const sub of subs) await sub.drain();
      await Promise.all(loops);
    },
  };
}

function describe(
  naming: Naming,
  seq: number,
  m: { subject: string; header?: MsgHdrs; data: Uint8Array; time: Date },
): DeadLetter {
  const originalSubject = readHeader(m.header, H_SUBJECT) ?? "";
  return {
    seq,
    subject: m.subject,
    kind: m.subject === naming.deadLetter(INBOX_DEAD) ? "inbox" : "task",
    originalSubject,
    originalSeq: Number(readHeader(m.header, H_SEQ) ?? 0),
    deliveries: Number(readHeader(m.header, H_DELIVERIES) ?? 0),
    ...recoverIds(m.data, m.header),
    reason: readHeader(m.header, H_REASON) ?? null,
    at: m.time.toISOString(),
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
    out.push(describe(naming, seq, m));
  }
  return out;
}

/**
 * Re-drives a dead letter: publishes it again to its original subject (a task to its role, an
 * inbox input to its session) and removes it from the dead-letter stream. A task whose session
 * has moved on yields a result that is dropped as not awaited; an inbox input already applied is
 * recognised by its input id — both harmless.
 */
export async function redriveDeadLetter(nc: NatsConnection, naming: Naming, seq: number): Promise<DeadLetter | null> {
  const jsm = await jetstreamManager(nc);
  const m = await jsm.streams.getMessage(naming.streams.dead, { seq }).catch(() => null);
  if (!m) return null;
  const original = readHeader(m.header, H_SUBJECT) ?? "";
  if (!original.startsWith(`${naming.prefix}.task.`) && !original.startsWith(`${naming.prefix}.inbox.`)) {
    throw new AgentmeshError("invalid_message", `dead letter ${seq} has no task or inbox subject to re-drive to`);
  }
  const h = makeHeaders();
  for (const [k, v] of m.header ? [...m.header] : [])
    if (![H_SUBJECT, H_SEQ, H_DELIVERIES, H_REASON].includes(k) && !isServerHeader(k))
      for (const one of v) h.append(k, one);
  await jetstream(nc).publish(original, m.data, { msgID: `redrive:${seq}`, headers: h });
  await jsm.streams.deleteMessage(naming.streams.dead, seq, false);
  return describe(naming, seq, m);
}

/** How `moveToDeadLetters` settled a message. */
export type DeadLetterMove =
  | { readonly moved: true }
  | { readonly moved: false; readonly err: unknown; readonly delayMs: number }
  | { readonly moved: false; readonly err?: undefined };

/**
 * Copies an unworkable message to the dead letters under `token`, then terms it. If the copy
 * fails, the message is nak'd after `retryDelay(deliveries)` so the move is tried again: nothing
 * is dropped. A message another path already settled is left alone (`moved: false`, no error).
 */
export async function moveToDeadLetters(
  nc: NatsConnection,
  naming: Naming,
  token: string,
  stream: string,
  entry: InFlight,
  reason: string,
  retryDelay: (deliveries: number) => number,
): Promise<DeadLetterMove> {
  const m = entry.msg;
  try {
    await publishDeadLetter(nc, naming, token, {
      stream,
      seq: m.seq,
      subject: m.subject,
      data: m.data,
      headers: m.headers,
      deliveries: m.info.deliveryCount,
      reason,
    });
  } catch (err) {
    if (entry.settled) return { moved: false };
    entry.settled = true;
    const delayMs = retryDelay(m.info.deliveryCount);
    m.nak(delayMs);
    return { moved: false, err, delayMs };
  }
  if (entry.settled) return { moved: false };
  entry.settled = true;
  m.term();
  return { moved: true };
}
