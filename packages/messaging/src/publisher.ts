import {
  AgentmeshError,
  CancelNotice,
  compiled,
  eventBatchMsgId,
  eventMsgId,
  EventBatch,
  formatZodError,
  InboxInput,
  LIMITS,
  SCHEMA_VERSION,
  SessionEvent,
  TaskEnvelope,
  type Naming,
  type OutboxEntry,
} from "@agentmesh/contracts";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { markCancelled } from "./cancelled.js";
import { jsonDepthOver } from "./decode.js";
import { natsFailure } from "./errors.js";
import type { Log } from "./log.js";
import { senderOf } from "./senders.js";
import { buildHeaders, type MessageContext } from "./trace.js";

/** A token-delta event, stored in the events stream on `<p>.tokens.<sid>.<role>`. */
export type TokenEvent = Extract<SessionEvent, { type: "token" }>;

/** Publishes every kind of message with its de-dup id and standard headers. */
export interface Publisher {
  /** A task on `<p>.task.<role>.<op>`, msg id = task_id. */
  publishTask(task: TaskEnvelope, ctx?: MessageContext): Promise<void>;
  /**
   * An inbox input on `<p>.inbox.<sid>.<sender>`, msg id = input_id. The sender is the role for
   * a result, `coordinator` for start and timer, and for user_reply and cancel `client` when the
   * publisher was made with `{ client: true }` (the CLI, a gateway), else `coordinator`.
   */
  publishInbox(input: InboxInput, ctx?: MessageContext): Promise<void>;
  /** A lifecycle event on `<p>.events.<sid>`, as a batch of one (msg id `<sid>:<version>:<index>+1`). */
  publishEvent(event: SessionEvent, ctx?: MessageContext): Promise<void>;
  /**
   * Events of one session and transition, in index order, as one message on `<p>.events.<sid>`
   * (an `EventBatch`; split in index order only when one message would exceed the size limit),
   * msg id `<sid>:<version>:<first index>+<count>`.
   */
  publishEvents(events: readonly SessionEvent[], ctx?: MessageContext): Promise<void>;
  /** Marks the session in the cancelled KV bucket (queued tasks are skipped), then broadcasts on `<p>.cancel.<sid>` (core NATS; agents abort in-flight work). */
  publishCancel(notice: CancelNotice, ctx?: MessageContext): Promise<void>;
  /**
   * A token message, stored in the events stream on `<p>.tokens.<sid>.<role>` (the event names its
   * role), msg id `<task_id>:t<offset>+<length>`; resolves once stored. Tokens are a preview:
   * callers need not wait.
   */
  publishTokens(event: TokenEvent, ctx?: MessageContext): Promise<void>;
  /**
   * Publishes a transition's outbox in order (events keep their order). The entries must come from
   * an outbox the session store accepted (it validates each one when it writes it): they are not
   * validated again here.
   */
  publishOutbox(entries: readonly OutboxEntry[], ctx?: MessageContext): Promise<void>;
}

/** A message's bytes, or why it cannot be sent: over LIMITS.maxMessageBytes or nested deeper than LIMITS.maxJsonDepth. */
function tryEncodeBounded(
  value: unknown,
  what: string,
): { ok: true; bytes: Uint8Array } | { ok: false; error: AgentmeshError } {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  if (bytes.byteLength > LIMITS.maxMessageBytes) {
    return {
      ok: false,
      error: new AgentmeshError(
        "payload_too_large",
        `${what} is ${bytes.byteLength} bytes, over the ${LIMITS.maxMessageBytes}-byte limit`,
      ),
    };
  }
  if (jsonDepthOver(bytes, LIMITS.maxJsonDepth)) {
    return {
      ok: false,
      error: new AgentmeshError("invalid_message", `${what} nests JSON deeper than ${LIMITS.maxJsonDepth} levels`),
    };
  }
  return { ok: true, bytes };
}

/** Serialises a message, refusing anything over LIMITS.maxMessageBytes or LIMITS.maxJsonDepth before it reaches the broker. */
export function encodeBounded(value: unknown, what: string): Uint8Array {
  const r = tryEncodeBounded(value, what);
  if (!r.ok) throw r.error;
  return r.bytes;
}

function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const r = compiled(schema).safeParse(value);
  if (!r.success)
    throw new AgentmeshError("invalid_message", `refusing to publish an invalid ${what}: ${formatZodError(r.error)}`);
  return r.data;
}

/**
 * How long a JetStream publish waits for its ack. The client's default, 5 s, is exceeded by a
 * busy server (seen with `pnpm bench --concurrent 10000` on a loaded machine):
 * an agent then nak'd a task it had finished and a coordinator redelivered a step it had
 * committed, so the server got the same work again exactly when it was short of time. The
 * message being handled is heartbeated while the publish waits, so a long wait costs no lease.
 */
export const JS_ACK_TIMEOUT_MS = 30_000;

/** How many times one publish is sent again after the connection moved to another server while its ack was awaited. */
export const REPUBLISH_ON_RECONNECT_MAX = 3;

/**
 * Resolves the waiters each time the connection is back on a server after losing one. An ack that
 * was due on the connection that broke never comes (it went to the old server's socket), so a
 * publish waiting for one would wait out its whole timeout: the reconnect is its cue to send again.
 */
function reconnectSignal(nc: NatsConnection): { next(): { promise: Promise<void>; cancel(): void } } {
  const waiters = new Set<() => void>();
  void (async () => {
    for await (const st of nc.status()) {
      if (st.type !== "reconnect") continue;
      for (const w of [...waiters]) w();
      waiters.clear();
    }
  })().catch(() => undefined);
  return {
    next() {
      let wake = () => {};
      const promise = new Promise<void>((resolve) => {
        wake = resolve;
        waiters.add(resolve);
      });
      return { promise, cancel: () => waiters.delete(wake) };
    },
  };
}

/** Who a publisher writes inbox inputs as. */
export interface PublisherOptions {
  /** A client (CLI, gateway): user_reply and cancel go out under the `client` sender. */
  readonly client?: boolean;
}

/** One acknowledged JetStream publish under a msg id (see `jsPublisher`). */
type JsPublish = (subject: string, stream: string, body: Uint8Array, msgID: string, headers: MsgHdrs) => Promise<void>;

/** What a publisher's parts send with: the connection, the naming table and the acknowledged publish. */
interface Sender {
  readonly nc: NatsConnection;
  readonly naming: Naming;
  readonly jsPublish: JsPublish;
}

/**
 * The msg id of a token message: its task and the span of text it covers, so the same message
 * sent again is stored once, while a redelivered task that cut its text elsewhere is stored too
 * (clients keep only the text they lack).
 */
const tokenMsgId = (e: TokenEvent): string => `${e.task_id}:t${e.offset ?? e.seq ?? 0}+${e.delta.length}`;

/** Creates the publisher for one naming table. */
export function createPublisher(nc: NatsConnection, naming: Naming, log: Log, opts: PublisherOptions = {}): Publisher {
  const s: Sender = { nc, naming, jsPublish: jsPublisher(nc, log) };
  return {
    async publishTask(task, ctx) {
      return sendTask(s, validate(TaskEnvelope, task, "task"), ctx);
    },

    async publishInbox(input, ctx) {
      const i = validate(InboxInput, input, "inbox input");
      const body = encodeBounded(i, `inbox input ${i.input_id}`);
      const taskId = i.kind === "result" ? i.task_id : i.kind === "timer" ? (i.task_id ?? undefined) : undefined;
      const h = buildHeaders({ traceparent: ctx?.traceparent, sessionId: i.session_id, taskId });
      return s.jsPublish(
        naming.inbox(i.session_id, senderOf(i, opts.client ?? false)),
        naming.streams.inbox,
        body,
        i.input_id,
        h,
      );
    },

    async publishEvent(event, ctx) {
      await Promise.all(sendEvents(s, [validate(SessionEvent, event, "event")], ctx));
    },

    async publishEvents(events, ctx) {
      if (events.length === 0) return;
      const first = events[0]!;
      const b = validate(
        EventBatch,
        { v: SCHEMA_VERSION, session_id: first.session_id, version: first.version, events },
        "event batch",
      );
      await Promise.all(sendEvents(s, b.events, ctx));
    },

    publishCancel: (notice, ctx) => sendCancel(s, notice, ctx),

    async publishTokens(event, ctx) {
      const e = validate(SessionEvent, event, "token event") as TokenEvent;
      if (e.role === undefined) throw new Error(`a token event of ${e.task_id} without its role`);
      const body = encodeBounded(e, "token event");
      const h = buildHeaders({ traceparent: ctx?.traceparent, sessionId: e.session_id, taskId: e.task_id });
      return s.jsPublish(naming.tokens(e.session_id, e.role), naming.streams.events, body, tokenMsgId(e), h);
    },

    publishOutbox: (entries, ctx) => sendOutbox(s, entries, ctx),
  };
}

/**
 * One JetStream publish, acknowledged. When the connection moves to another server while the
 * ack is awaited (the server died, stopped or was cut off), the message is sent again there:
 * its msg id makes JetStream keep one copy, and the ack of the new send does come.
 */
function jsPublisher(nc: NatsConnection, log: Log): JsPublish {
  const js: JetStreamClient = jetstream(nc, { timeout: JS_ACK_TIMEOUT_MS });
  const reconnected = reconnectSignal(nc);
  return async (subject, stream, body, msgID, headers) => {
    for (let resent = 0; ; resent++) {
      const moved = reconnected.next();
      const sending = js.publish(subject, body, { msgID, headers, expect: { streamName: stream } });
      try {
        const ack = resent >= REPUBLISH_ON_RECONNECT_MAX ? await sending : await Promise.race([sending, moved.promise]);
        if (ack === undefined) {
          // the reconnect came first; the first send's ack, if it ever settles, is not waited for
          sending.catch(() => undefined);
          log.warn(
            { subject, msg_id: msgID, resent: resent + 1 },
            "the connection moved while a publish awaited its ack; publishing again",
          );
          continue;
        }
        if (ack.duplicate) log.debug({ subject, msg_id: msgID }, "duplicate publish ignored by JetStream");
        return;
      } catch (err) {
        throw natsFailure(err, `publish to ${subject} (stream ${stream}) failed`);
      } finally {
        moved.cancel();
      }
    }
  };
}

/** A task already validated (by `publishTask`, or as part of a stored outbox). */
function sendTask(s: Sender, t: TaskEnvelope, ctx: MessageContext | undefined): Promise<void> {
  const body = encodeBounded(t, `task ${t.task_id}`);
  const h = buildHeaders({
    traceparent: ctx?.traceparent,
    sessionId: t.session_id,
    taskId: t.task_id,
    threadId: ctx?.threadId,
  });
  return s.jsPublish(s.naming.task(t.role, t.op), s.naming.streams.tasks, body, t.task_id, h);
}

/**
 * Events already validated (by `publishEvents`, or as part of a stored outbox), of one session and
 * version in index order: one batch message (msg id `<sid>:<version>:<first>+<count>`) per run of
 * events that fits the limits, in index order. The split depends only on the events, so a
 * republished outbox splits the same way and every message is a duplicate. An event that fits
 * only on its own (the batch's wrapper adds bytes and two levels of nesting) goes out bare, under
 * its own id `<sid>:<version>:<index>`, as events did before batches.
 */
function sendEvents(s: Sender, events: readonly SessionEvent[], ctx: MessageContext | undefined): Promise<void>[] {
  const { naming } = s;
  const first = events[0];
  if (first === undefined) return [];
  const sid = first.session_id;
  const what = `events of ${sid} v${first.version}`;
  const send = (body: Uint8Array, msgId: string) =>
    s.jsPublish(
      naming.events(sid),
      naming.streams.events,
      body,
      msgId,
      buildHeaders({ traceparent: ctx?.traceparent, sessionId: sid, threadId: ctx?.threadId }),
    );
  const batch = (run: readonly SessionEvent[]) =>
    tryEncodeBounded(
      { v: SCHEMA_VERSION, session_id: sid, version: first.version, events: [...run] } satisfies EventBatch,
      what,
    );
  const sendRun = (run: readonly SessionEvent[], encoded = batch(run)): Promise<void> => {
    const head = run[0]!;
    if (encoded.ok) return send(encoded.bytes, eventBatchMsgId(sid, first.version, head.index, run.length));
    // only a run of one can be refused here (a longer run was tried one event shorter first)
    return send(
      encodeBounded(head, `event ${head.type} of ${sid} v${first.version}`),
      eventMsgId(sid, first.version, head.index),
    );
  };
  const whole = batch(events);
  if (whole.ok) return [sendRun(events, whole)];
  const sent: Promise<void>[] = [];
  let run: SessionEvent[] = [];
  for (const e of events) {
    if (run.length > 0 && !batch([...run, e]).ok) {
      sent.push(sendRun(run));
      run = [];
    }
    run.push(e);
  }
  sent.push(sendRun(run));
  return sent;
}

/** `publishCancel`: the mark in the bucket, then the broadcast. */
async function sendCancel(s: Sender, notice: CancelNotice, ctx: MessageContext | undefined): Promise<void> {
  const { nc, naming } = s;
  const n = validate(CancelNotice, notice, "cancel notice");
  const body = encodeBounded(n, "cancel notice");
  try {
    // durable first: agents check the bucket before starting a task, so queued tasks of the
    // session are skipped even by agents that were not listening when the broadcast went out
    await markCancelled(nc, naming, n.session_id, n.reason);
    nc.publish(naming.cancel(n.session_id), body, {
      headers: buildHeaders({ traceparent: ctx?.traceparent, sessionId: n.session_id }),
    });
    // a cancel is fire-and-forget, but the caller should know it left this process
    await nc.flush();
  } catch (err) {
    throw natsFailure(err, `cancel broadcast for ${n.session_id} failed`);
  }
}

/** `publishOutbox`: every entry started in order, their acks awaited together. */
async function sendOutbox(s: Sender, entries: readonly OutboxEntry[], ctx: MessageContext | undefined): Promise<void> {
  // Each publish starts synchronously, so entries reach the connection in order; their acks
  // are awaited together rather than one round trip after another. Tasks and events are not
  // validated again: an outbox is validated as a whole when the session store writes it, and
  // only a stored outbox is published (the size and depth limits still apply, in encodeBounded).
  // A transition's events (all of its version, in index order) go out as one message, where the first one stood.
  const events = entries.flatMap((e) => (e.kind === "event" ? [e.event] : []));
  const firstEvent = entries.findIndex((e) => e.kind === "event");
  const pending = entries.flatMap((entry, i): Promise<void> | Promise<void>[] => {
    switch (entry.kind) {
      case "task":
        return sendTask(s, entry.task, ctx);
      case "event":
        return i === firstEvent ? sendEvents(s, events, ctx) : [];
      case "cancel":
        return sendCancel(s, entry.notice, ctx);
      default: {
        const never: never = entry;
        return Promise.reject(new AgentmeshError("internal", `unknown outbox entry ${JSON.stringify(never)}`));
      }
    }
  });
  await Promise.all(pending);
}
