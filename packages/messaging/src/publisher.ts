import {
  AgentmeshError,
  CancelNotice,
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

/** A token-delta event, sent live on core NATS only. */
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
  /** A lifecycle event on `<p>.events.<sid>`, as a batch of one (msg id `<sid>:<version>:<index>`). */
  publishEvent(event: SessionEvent, ctx?: MessageContext): Promise<void>;
  /**
   * Events of one session and transition, in index order, as one message on `<p>.events.<sid>`
   * (an `EventBatch`; split in index order only when one message would exceed the size limit),
   * msg id `<sid>:<version>:<first index>`.
   */
  publishEvents(events: readonly SessionEvent[], ctx?: MessageContext): Promise<void>;
  /** Marks the session in the cancelled KV bucket (queued tasks are skipped), then broadcasts on `<p>.cancel.<sid>` (core NATS; agents abort in-flight work). */
  publishCancel(notice: CancelNotice, ctx?: MessageContext): Promise<void>;
  /** A token delta on `<p>.tokens.<sid>` (core NATS; live only, never replayed). */
  publishTokens(event: TokenEvent, ctx?: MessageContext): void;
  /**
   * Publishes a transition's outbox in order (events keep their order). The entries must come from
   * an outbox the session store accepted (it validates each one when it writes it): they are not
   * validated again here.
   */
  publishOutbox(entries: readonly OutboxEntry[], ctx?: MessageContext): Promise<void>;
}

/** A batch's bytes when it fits one message, else null. */
function encodeBatch(b: EventBatch): Uint8Array | null {
  const bytes = new TextEncoder().encode(JSON.stringify(b));
  return bytes.byteLength <= LIMITS.maxMessageBytes && !jsonDepthOver(bytes, LIMITS.maxJsonDepth) ? bytes : null;
}

/** Serialises a message, refusing anything over LIMITS.maxMessageBytes or LIMITS.maxJsonDepth before it reaches the broker. */
export function encodeBounded(value: unknown, what: string): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  if (bytes.byteLength > LIMITS.maxMessageBytes) {
    throw new AgentmeshError(
      "payload_too_large",
      `${what} is ${bytes.byteLength} bytes, over the ${LIMITS.maxMessageBytes}-byte limit`,
    );
  }
  if (jsonDepthOver(bytes, LIMITS.maxJsonDepth)) {
    throw new AgentmeshError("invalid_message", `${what} nests JSON deeper than ${LIMITS.maxJsonDepth} levels`);
  }
  return bytes;
}

function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw new AgentmeshError("invalid_message", `refusing to publish an invalid ${what}: ${formatZodError(r.error)}`);
  return r.data;
}

/** Who a publisher writes inbox inputs as. */
export interface PublisherOptions {
  /** A client (CLI, gateway): user_reply and cancel go out under the `client` sender. */
  readonly client?: boolean;
}

/** Creates the publisher for one naming table. */
export function createPublisher(nc: NatsConnection, naming: Naming, log: Log, opts: PublisherOptions = {}): Publisher {
  const js: JetStreamClient = jetstream(nc);

  async function jsPublish(subject: string, stream: string, body: Uint8Array, msgID: string, headers: MsgHdrs): Promise<void> {
    try {
      const ack = await js.publish(subject, body, { msgID, headers, expect: { streamName: stream } });
      if (ack.duplicate) log.debug({ subject, msg_id: msgID }, "duplicate publish ignored by JetStream");
    } catch (err) {
      throw natsFailure(err, `publish to ${subject} (stream ${stream}) failed`);
    }
  }

  /** A task already validated (by `publishTask`, or as part of a stored outbox). */
  function sendTask(t: TaskEnvelope, ctx: MessageContext | undefined): Promise<void> {
    const body = encodeBounded(t, `task ${t.task_id}`);
    const h = buildHeaders({ traceparent: ctx?.traceparent, sessionId: t.session_id, taskId: t.task_id, threadId: ctx?.threadId });
    return jsPublish(naming.task(t.role, t.op), naming.streams.tasks, body, t.task_id, h);
  }

  /**
   * Events already validated (by `publishEvents`, or as part of a stored outbox), of one session and
   * version in index order: one message each run of events that fits the size limit.
   */
  function sendEvents(events: readonly SessionEvent[], ctx: MessageContext | undefined): Promise<void>[] {
    const first = events[0];
    if (first === undefined) return [];
    const sid = first.session_id;
    const h = () => buildHeaders({ traceparent: ctx?.traceparent, sessionId: sid, threadId: ctx?.threadId });
    const publish = (run: readonly SessionEvent[], body: Uint8Array) =>
      jsPublish(naming.events(sid), naming.streams.events, body, eventMsgId(sid, first.version, run[0]!.index), h());
    const batch = (run: readonly SessionEvent[]): EventBatch => ({ v: SCHEMA_VERSION, session_id: sid, version: first.version, events: [...run] });
    const whole = encodeBatch(batch(events));
    if (whole !== null) return [publish(events, whole)];
    // Too large together: greedy runs in index order, each under the limit (one event always fits,
    // its own size was checked when it was made). The split depends only on the events, so a
    // republished outbox splits the same way and every message is a duplicate.
    const sent: Promise<void>[] = [];
    let run: SessionEvent[] = [];
    for (const e of events) {
      if (run.length > 0 && encodeBatch(batch([...run, e])) === null) {
        sent.push(publish(run, encodeBounded(batch(run), `events of ${sid} v${first.version}`)));
        run = [];
      }
      run.push(e);
    }
    sent.push(publish(run, encodeBounded(batch(run), `events of ${sid} v${first.version}`)));
    return sent;
  }

  const publisher: Publisher = {
    async publishTask(task, ctx) {
      return sendTask(validate(TaskEnvelope, task, "task"), ctx);
    },

    async publishInbox(input, ctx) {
      const i = validate(InboxInput, input, "inbox input");
      const body = encodeBounded(i, `inbox input ${i.input_id}`);
      const taskId = i.kind === "result" ? i.task_id : i.kind === "timer" ? (i.task_id ?? undefined) : undefined;
      const h = buildHeaders({ traceparent: ctx?.traceparent, sessionId: i.session_id, taskId });
      return jsPublish(naming.inbox(i.session_id, senderOf(i, opts.client ?? false)), naming.streams.inbox, body, i.input_id, h);
    },

    async publishEvent(event, ctx) {
      await Promise.all(sendEvents([validate(SessionEvent, event, "event")], ctx));
    },

    async publishEvents(events, ctx) {
      if (events.length === 0) return;
      const first = events[0]!;
      const b = validate(EventBatch, { v: SCHEMA_VERSION, session_id: first.session_id, version: first.version, events }, "event batch");
      await Promise.all(sendEvents(b.events, ctx));
    },

    async publishCancel(notice, ctx) {
      const n = validate(CancelNotice, notice, "cancel notice");
      const body = encodeBounded(n, "cancel notice");
      try {
        // durable first: agents check the bucket before starting a task, so queued tasks of the
        // session are skipped even by agents that were not listening when the broadcast went out
        await markCancelled(nc, naming, n.session_id, n.reason);
        nc.publish(naming.cancel(n.session_id), body, { headers: buildHeaders({ traceparent: ctx?.traceparent, sessionId: n.session_id }) });
        // a cancel is fire-and-forget, but the caller should know it left this process
        await nc.flush();
      } catch (err) {
        throw natsFailure(err, `cancel broadcast for ${n.session_id} failed`);
      }
    },

    publishTokens(event, ctx) {
      const e = validate(SessionEvent, event, "token event") as TokenEvent;
      const body = encodeBounded(e, "token event");
      const h = buildHeaders({ traceparent: ctx?.traceparent, sessionId: e.session_id, taskId: e.task_id });
      nc.publish(naming.tokens(e.session_id), body, { headers: h });
    },

    async publishOutbox(entries, ctx) {
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
            return sendTask(entry.task, ctx);
          case "event":
            return i === firstEvent ? sendEvents(events, ctx) : [];
          case "cancel":
            return publisher.publishCancel(entry.notice, ctx);
          default: {
            const never: never = entry;
            return Promise.reject(new AgentmeshError("internal", `unknown outbox entry ${JSON.stringify(never)}`));
          }
        }
      });
      await Promise.all(pending);
    },
  };
  return publisher;
}
