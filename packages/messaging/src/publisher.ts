import {
  AgentmeshError,
  CancelNotice,
  eventMsgId,
  formatZodError,
  InboxInput,
  LIMITS,
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
  /** A lifecycle event on `<p>.events.<sid>`, msg id = `<sid>:<version>:<index>`. */
  publishEvent(event: SessionEvent, ctx?: MessageContext): Promise<void>;
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

  /** An event already validated (by `publishEvent`, or as part of a stored outbox). */
  function sendEvent(e: SessionEvent, ctx: MessageContext | undefined): Promise<void> {
    const body = encodeBounded(e, `event ${e.type}`);
    const taskId = "task_id" in e ? e.task_id : undefined;
    const h = buildHeaders({ traceparent: ctx?.traceparent, sessionId: e.session_id, taskId, threadId: ctx?.threadId });
    return jsPublish(naming.events(e.session_id), naming.streams.events, body, eventMsgId(e.session_id, e.version, e.index), h);
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
      return sendEvent(validate(SessionEvent, event, "event"), ctx);
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
      const pending = entries.map((entry) => {
        switch (entry.kind) {
          case "task":
            return sendTask(entry.task, ctx);
          case "event":
            return sendEvent(entry.event, ctx);
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
