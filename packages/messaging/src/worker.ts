import {
  AgentmeshError,
  compiled,
  HEADERS,
  formatZodError,
  inputIds,
  SCHEMA_VERSION,
  TaskEnvelope,
  TaskOutcome,
  type InboxInput,
  type Naming,
  type WireError,
} from "@agentmesh/contracts";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { cancelledChecker, sharedCancelledView } from "./cancelled.js";
import { moveToDeadLetters, recoverIds } from "./dead-letters.js";
import { decodeMessage, retryDelayMs } from "./decode.js";
import { thrownError } from "./errors.js";
import type { Log } from "./log.js";
import { createPublisher } from "./publisher.js";
import { getDurable, SHUTDOWN, startPullLoop, type InFlight } from "./pull-loop.js";
import { childTraceparent, readHeader, traceparentOf } from "./trace.js";
import type { CrashHook, TaskHandler, TaskSettledHook, TaskSettlement, Worker, WorkStats } from "./types.js";

/** Settings of one role's task worker. */
export interface WorkerOptions {
  readonly naming: Naming;
  readonly role: string;
  /** Tasks worked at once; each pull asks only for the free slots, so no task waits unleased in a buffer. */
  readonly concurrency: number;
  /** The consumer's ack_wait; working() is sent every third of it. */
  readonly ackWaitMs: number;
  /** The consumer's max_deliver; the last delivery reports a failure instead of nak'ing. */
  readonly maxDeliver: number;
  readonly handler: TaskHandler;
  readonly log: Log;
  readonly crash?: CrashHook;
  /** Clock for deadlines (tests). */
  readonly now?: () => number;
  /** Told how each delivery was settled (metrics); must not throw. */
  readonly onSettled?: TaskSettledHook;
}

/** Longest delay setTimeout accepts (~24.8 days); a farther deadline is simply not armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Consumes one role's tasks, runs the handler and reports each outcome to the session inbox. */
export async function startWorker(nc: NatsConnection, opts: WorkerOptions): Promise<Worker> {
  const { naming, role, log, handler } = opts;
  const clock = opts.now ?? Date.now;
  const crash: CrashHook = opts.crash ?? (() => undefined);
  const stream = naming.streams.tasks;
  const durable = naming.consumers.role(role);
  const what = { stream, consumer: durable, role };
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new AgentmeshError("internal", `worker concurrency must be a positive integer, got ${opts.concurrency}`);
  }

  const durableNow = await getDurable(nc, stream, durable);
  const consumer = durableNow.consumer;
  const { ackWaitMs, maxDeliver } = reconcile(durableNow.info, opts, log, what);

  const publisher = createPublisher(nc, naming, log);
  const settled = (op: string, settlement: TaskSettlement, deliveryCount: number) =>
    opts.onSettled?.({ op, settlement, deliveryCount });
  const counts = { processed: 0, failed: 0, redelivered: 0, dropped: 0 };
  const bySession = new Map<string, Set<AbortController>>();
  const readCancelled = cancelledChecker(nc, naming);
  // The bucket, watched: a task checks it here without a round trip once the watch has caught up.
  // A mark the watch has not delivered yet is the same case as a cancel that comes just after the
  // task started: the broadcast (sent after the mark was stored) aborts the task, or, when it
  // arrives first, marks the session here before the task starts.
  const watch = sharedCancelledView(nc, naming, (err) =>
    log.warn({ ...what, err }, "cannot watch the cancelled-sessions bucket; reading it per task"),
  );
  const cancelled = watch.view;
  /** A failed lookup works the task (as before the bucket existed); the cancel broadcast still reaches it. */
  async function sessionCancelled(sessionId: string): Promise<boolean> {
    if (cancelled.has(sessionId)) return true;
    if (cancelled.ready) return false;
    try {
      return await readCancelled(sessionId);
    } catch (err) {
      log.warn({ ...what, session_id: sessionId, err }, "cannot read the cancelled-sessions bucket; working the task");
      return false;
    }
  }

  const cancelSub: Subscription = nc.subscribe(naming.cancelAll, {
    callback: (err, msg) => {
      if (err) return;
      const sid = msg.subject.slice(msg.subject.lastIndexOf(".") + 1);
      cancelled.add(sid);
      const running = bySession.get(sid);
      if (!running) return;
      log.info({ ...what, session_id: sid, tasks: running.size }, "cancel notice: aborting in-flight tasks");
      for (const c of running)
        c.abort(new AgentmeshError("cancelled", `session ${sid} was cancelled`, { component: role }));
    },
  });

  /**
   * A task that can never be worked. When its session and task ids can be recovered, the session
   * gets a typed non-retryable failure at once (instead of waiting out its deadline); otherwise
   * (or when it was routed to the wrong role or op) it goes to the dead letters. Then it is termed.
   */
  async function unworkable(
    entry: InFlight,
    code: WireError["code"],
    reason: string,
    mayReport: boolean,
  ): Promise<void> {
    const m = entry.msg;
    counts.dropped++;
    const op = m.subject.startsWith(`${naming.task(role, "")}`) ? m.subject.slice(naming.task(role, "").length) : "";
    settled(op, "dropped", m.info.deliveryCount);
    const ids = mayReport ? recoverIds(m.data, m.headers) : { taskId: null, sessionId: null };
    if (ids.taskId !== null && ids.sessionId !== null && op.length > 0 && op.length <= 40 && !op.includes(".")) {
      log.warn(
        { ...what, subject: m.subject, seq: m.seq, task_id: ids.taskId, session_id: ids.sessionId, reason },
        "unreadable task; reporting a non-retryable failure to its session",
      );
      const error = wireFailure(code, `the ${role} agent could not read task ${ids.taskId}: ${reason}`, role);
      return report(
        entry,
        { session_id: ids.sessionId, task_id: ids.taskId, role, op },
        { ok: false, error, provenance: null },
        true,
      );
    }
    const r = await moveToDeadLetters(nc, naming, role, stream, entry, reason, (n) => retryDelayMs(n));
    if (r.moved)
      log.warn({ ...what, subject: m.subject, seq: m.seq, reason }, "dead-lettered a task that can never be processed");
    else if (r.err !== undefined)
      log.error(
        { ...what, seq: m.seq, err: r.err, delay_ms: r.delayMs },
        "cannot dead-letter an unworkable task; retrying later",
      );
  }

  /** Publishes the outcome, then acks; `counted` when the delivery was already told as dropped. */
  async function report(
    entry: InFlight,
    task: Pick<TaskEnvelope, "session_id" | "task_id" | "role" | "op">,
    outcome: TaskOutcome,
    counted = false,
  ): Promise<void> {
    const m = entry.msg;
    const traceparent = childTraceparent(readHeader(m.headers, "traceparent"));
    const input = (o: TaskOutcome): InboxInput => ({
      v: SCHEMA_VERSION,
      kind: "result",
      session_id: task.session_id,
      input_id: inputIds.result(task.task_id),
      task_id: task.task_id,
      role: task.role,
      op: task.op,
      outcome: o,
    });
    try {
      try {
        await publisher.publishInbox(input(outcome), { traceparent });
      } catch (err) {
        // an outcome we cannot send is still an outcome: report why instead of looping on it
        if (!(err instanceof AgentmeshError) || (err.code !== "payload_too_large" && err.code !== "invalid_message"))
          throw err;
        outcome = { ok: false, error: err.toWire(role), provenance: null };
        await publisher.publishInbox(input(outcome), { traceparent });
      }
    } catch (err) {
      if (entry.settled) return;
      entry.settled = true;
      const delay = retryDelayMs(m.info.deliveryCount);
      log.error(
        { ...what, task_id: task.task_id, err, delay_ms: delay },
        "cannot publish the task outcome; retrying the task later",
      );
      m.nak(delay);
      if (!counted) settled(task.op, "redelivered", m.info.deliveryCount);
      return;
    }
    crash("after-result-publish");
    crash("before-ack");
    if (entry.settled) return;
    entry.settled = true;
    if (outcome.ok) counts.processed++;
    else counts.failed++;
    if (!counted) settled(task.op, outcome.ok ? "completed" : "failed", m.info.deliveryCount);
    // A plain ack, not a confirmed one: a lost ack only means a redelivery, whose result is
    // de-duplicated, and waiting for the server's confirmation cost a request per task.
    m.ack();
  }

  async function handle(entry: InFlight): Promise<void> {
    const m = entry.msg;
    const deliveryCount = m.info.deliveryCount;
    if (deliveryCount > 1) counts.redelivered++;
    const d = decodeMessage(m.data, TaskEnvelope, "task");
    if (!d.ok) return unworkable(entry, d.code, d.reason, true);
    const task = d.value;
    // misrouted: this role may not answer for another one, so only the dead letters can keep it
    if (task.role !== role)
      return unworkable(
        entry,
        "invalid_message",
        `task for role "${task.role}" arrived on the "${role}" consumer`,
        false,
      );
    if (m.subject !== naming.task(task.role, task.op))
      return unworkable(entry, "invalid_message", `task for ${task.role}.${task.op} arrived on ${m.subject}`, false);
    const tlog = { ...what, task_id: task.task_id, session_id: task.session_id, op: task.op, delivery: deliveryCount };

    const now = clock();
    // A backed-off retry that arrived early goes back until its time (one delivery; the last one is worked at once).
    if (task.not_before !== undefined && task.not_before > now && deliveryCount < maxDeliver) {
      const delay = task.not_before - now;
      log.debug({ ...tlog, delay_ms: delay }, "task not due yet; nak until its time");
      entry.settled = true;
      m.nak(delay);
      settled(task.op, "redelivered", deliveryCount);
      return;
    }
    if (task.deadline_at !== null && task.deadline_at <= now) {
      log.warn(tlog, "task deadline already passed; reporting deadline_exceeded without working it");
      settled(task.op, "dropped", deliveryCount);
      const error = wireFailure(
        "deadline_exceeded",
        `task ${task.task_id} reached the ${role} agent ${now - task.deadline_at} ms after its deadline`,
        role,
      );
      return report(entry, task, { ok: false, error, provenance: null }, true);
    }

    if (await sessionCancelled(task.session_id)) {
      log.info(tlog, "session was cancelled before this task started; reporting cancelled without working it");
      settled(task.op, "dropped", deliveryCount);
      const error = wireFailure(
        "cancelled",
        `session ${task.session_id} was cancelled before task ${task.task_id} started`,
        role,
      );
      return report(entry, task, { ok: false, error, provenance: null }, true);
    }

    crash("after-fetch");
    const controller = entry.controller;
    let running = bySession.get(task.session_id);
    if (!running) bySession.set(task.session_id, (running = new Set()));
    running.add(controller);
    const deadline =
      task.deadline_at === null || task.deadline_at - now > MAX_TIMER_MS
        ? undefined
        : setTimeout(
            () =>
              controller.abort(
                new AgentmeshError("deadline_exceeded", `task ${task.task_id} ran past its deadline`, {
                  component: role,
                }),
              ),
            task.deadline_at - now,
          );

    let outcome: TaskOutcome;
    try {
      const result = await handler(task, {
        deliveryCount,
        lastDelivery: deliveryCount >= maxDeliver,
        signal: controller.signal,
        traceparent: traceparentOf(m.headers),
        threadId: readHeader(m.headers, HEADERS.threadId),
      });
      const checked = compiled(TaskOutcome).safeParse(result);
      outcome = checked.success
        ? checked.data
        : {
            ok: false,
            error: wireFailure(
              "internal",
              `the ${role} handler returned an invalid outcome: ${formatZodError(checked.error)}`,
              role,
            ),
            provenance: null,
          };
    } catch (err) {
      outcome = { ok: false, error: thrownToWire(err, controller.signal, role), provenance: null };
    } finally {
      clearTimeout(deadline);
      running.delete(controller);
      if (running.size === 0) bySession.delete(task.session_id);
    }
    // A failure returned after the signal was aborted is the abort's doing: report its reason
    // (deadline passed, session cancelled), as for a throw, not e.g. the model port's "cancelled".
    if (!outcome.ok && controller.signal.aborted && controller.signal.reason instanceof AgentmeshError) {
      outcome = { ...outcome, error: controller.signal.reason.toWire(role) };
    }

    if (entry.settled) return;
    if (controller.signal.reason === SHUTDOWN) {
      entry.settled = true;
      m.nak();
      settled(task.op, "redelivered", deliveryCount);
      return;
    }
    if (!outcome.ok && outcome.error.retryable && deliveryCount < maxDeliver) {
      const delay = retryDelayMs(deliveryCount);
      log.warn(
        { ...tlog, code: outcome.error.code, delay_ms: delay, error: outcome.error.message },
        "retryable failure; nak with delay",
      );
      entry.settled = true;
      m.nak(delay);
      settled(task.op, "redelivered", deliveryCount);
      return;
    }
    if (!outcome.ok)
      log.warn(
        { ...tlog, code: outcome.error.code, error: outcome.error.message },
        "task failed; reporting the failure",
      );
    return report(entry, task, outcome);
  }

  const loop = startPullLoop({
    nc,
    consumer,
    concurrency: opts.concurrency,
    heartbeatMs: Math.max(100, Math.floor(ackWaitMs / 3)),
    log,
    what,
    handle,
  });
  log.info(
    { ...what, concurrency: opts.concurrency, ack_wait_ms: ackWaitMs, max_deliver: maxDeliver },
    "worker started",
  );

  return {
    get stats(): WorkStats {
      return { ...counts, in_flight: loop.inFlight() };
    },
    alive: () => loop.alive(),
    async stop(graceMs) {
      await loop.stop(graceMs);
      cancelSub.unsubscribe();
      watch.release();
      log.info({ ...what, ...counts }, "worker stopped");
    },
  };
}

function wireFailure(code: WireError["code"], message: string, component: string): WireError {
  return new AgentmeshError(code, message, { component }).toWire();
}

/** A throw becomes a typed failure; the abort reason wins so a cancel is not mistaken for a bug. */
function thrownToWire(err: unknown, signal: AbortSignal, role: string): WireError {
  if (signal.aborted && signal.reason instanceof AgentmeshError) return signal.reason.toWire(role);
  if (err instanceof AgentmeshError) return err.toWire(role);
  // a handler that throws something untyped may hit a transient fault: let a retry try again
  return { ...thrownError(err).toWire(role), retryable: true };
}

/** The server's consumer settings win: heartbeats must beat the real ack_wait and the last delivery must be the real last. */
function reconcile(
  info: { config: { ack_wait?: number; max_deliver?: number } },
  opts: WorkerOptions,
  log: Log,
  what: Record<string, string>,
): { ackWaitMs: number; maxDeliver: number } {
  const serverAckWaitMs = info.config.ack_wait ? Math.floor(info.config.ack_wait / 1_000_000) : opts.ackWaitMs;
  const serverMaxDeliver =
    info.config.max_deliver && info.config.max_deliver > 0 ? info.config.max_deliver : opts.maxDeliver;
  if (serverAckWaitMs !== opts.ackWaitMs || serverMaxDeliver !== opts.maxDeliver) {
    log.warn(
      {
        ...what,
        ack_wait_ms: opts.ackWaitMs,
        server_ack_wait_ms: serverAckWaitMs,
        max_deliver: opts.maxDeliver,
        server_max_deliver: serverMaxDeliver,
      },
      "worker settings differ from the provisioned consumer; using the stricter values",
    );
  }
  return {
    ackWaitMs: Math.min(serverAckWaitMs, opts.ackWaitMs),
    maxDeliver: Math.min(serverMaxDeliver, opts.maxDeliver),
  };
}
