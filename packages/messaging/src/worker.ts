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
import { cancelledChecker, sharedCancelledView, type CancelledView } from "./cancelled.js";
import { moveToDeadLetters, recoverIds } from "./dead-letters.js";
import { decodeMessage, retryDelayMs } from "./decode.js";
import { thrownError } from "./errors.js";
import type { Log } from "./log.js";
import { createPublisher, type Publisher } from "./publisher.js";
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

/** What a worker's task handling shares: its settings, its counters and each session's running tasks. */
interface WorkerState {
  readonly nc: NatsConnection;
  readonly naming: Naming;
  readonly role: string;
  readonly stream: string;
  readonly what: { stream: string; consumer: string; role: string };
  readonly log: Log;
  readonly handler: TaskHandler;
  readonly clock: () => number;
  readonly crash: CrashHook;
  readonly maxDeliver: number;
  readonly publisher: Publisher;
  readonly counts: { processed: number; failed: number; redelivered: number; dropped: number };
  /** session id → the controllers of its tasks in flight here */
  readonly bySession: Map<string, Set<AbortController>>;
  readonly readCancelled: (sessionId: string) => Promise<boolean>;
  readonly cancelled: CancelledView;
  readonly settled: (op: string, settlement: TaskSettlement, deliveryCount: number) => void;
}

/** Consumes one role's tasks, runs the handler and reports each outcome to the session inbox. */
export async function startWorker(nc: NatsConnection, opts: WorkerOptions): Promise<Worker> {
  const { naming, role, log } = opts;
  const stream = naming.streams.tasks;
  const durable = naming.consumers.role(role);
  const what = { stream, consumer: durable, role };
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new AgentmeshError("internal", `worker concurrency must be a positive integer, got ${opts.concurrency}`);
  }

  const durableNow = await getDurable(nc, stream, durable);
  const { ackWaitMs, maxDeliver } = reconcile(durableNow.info, opts, log, what);
  const publisher = createPublisher(nc, naming, log);
  const readCancelled = cancelledChecker(nc, naming);
  // The bucket, watched: a task checks it here without a round trip once the watch has caught up.
  // A mark the watch has not delivered yet is the same case as a cancel that comes just after the
  // task started: the broadcast (sent after the mark was stored) aborts the task, or, when it
  // arrives first, marks the session here before the task starts.
  const watch = sharedCancelledView(nc, naming, (err) =>
    log.warn({ ...what, err }, "cannot watch the cancelled-sessions bucket; reading it per task"),
  );
  const state: WorkerState = {
    nc,
    naming,
    role,
    stream,
    what,
    log,
    handler: opts.handler,
    clock: opts.now ?? Date.now,
    crash: opts.crash ?? (() => undefined),
    maxDeliver,
    publisher,
    counts: { processed: 0, failed: 0, redelivered: 0, dropped: 0 },
    bySession: new Map(),
    readCancelled,
    cancelled: watch.view,
    settled: (op, settlement, deliveryCount) => opts.onSettled?.({ op, settlement, deliveryCount }),
  };
  const cancelSub = subscribeCancelNotices(state);

  const loop = startPullLoop({
    nc,
    consumer: durableNow.consumer,
    concurrency: opts.concurrency,
    heartbeatMs: Math.max(100, Math.floor(ackWaitMs / 3)),
    log,
    what,
    handle: (entry) => handleTask(state, entry),
  });
  log.info(
    { ...what, concurrency: opts.concurrency, ack_wait_ms: ackWaitMs, max_deliver: maxDeliver },
    "worker started",
  );

  const { counts } = state;
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

/** A cancel broadcast marks its session here and aborts the session's tasks in flight. */
function subscribeCancelNotices(s: WorkerState): Subscription {
  const { log, what, role } = s;
  return s.nc.subscribe(s.naming.cancelAll, {
    callback: (err, msg) => {
      if (err) return;
      const sid = msg.subject.slice(msg.subject.lastIndexOf(".") + 1);
      s.cancelled.add(sid);
      const running = s.bySession.get(sid);
      if (!running) return;
      log.info({ ...what, session_id: sid, tasks: running.size }, "cancel notice: aborting in-flight tasks");
      for (const c of running)
        c.abort(new AgentmeshError("cancelled", `session ${sid} was cancelled`, { component: role }));
    },
  });
}

/** A failed lookup works the task (as before the bucket existed); the cancel broadcast still reaches it. */
async function sessionCancelled(s: WorkerState, sessionId: string): Promise<boolean> {
  if (s.cancelled.has(sessionId)) return true;
  if (s.cancelled.ready) return false;
  try {
    return await s.readCancelled(sessionId);
  } catch (err) {
    s.log.warn(
      { ...s.what, session_id: sessionId, err },
      "cannot read the cancelled-sessions bucket; working the task",
    );
    return false;
  }
}

/**
 * A task that can never be worked. When its session and task ids can be recovered, the session
 * gets a typed non-retryable failure at once (instead of waiting out its deadline); otherwise
 * (or when it was routed to the wrong role or op) it goes to the dead letters. Then it is termed.
 */
async function unworkable(
  s: WorkerState,
  entry: InFlight,
  code: WireError["code"],
  reason: string,
  mayReport: boolean,
): Promise<void> {
  const { naming, role, what, log } = s;
  const m = entry.msg;
  s.counts.dropped++;
  const op = m.subject.startsWith(`${naming.task(role, "")}`) ? m.subject.slice(naming.task(role, "").length) : "";
  s.settled(op, "dropped", m.info.deliveryCount);
  const ids = mayReport ? recoverIds(m.data, m.headers) : { taskId: null, sessionId: null };
  if (ids.taskId !== null && ids.sessionId !== null && op.length > 0 && op.length <= 40 && !op.includes(".")) {
    log.warn(
      { ...what, subject: m.subject, seq: m.seq, task_id: ids.taskId, session_id: ids.sessionId, reason },
      "unreadable task; reporting a non-retryable failure to its session",
    );
    const error = wireFailure(code, `the ${role} agent could not read task ${ids.taskId}: ${reason}`, role);
    return report(
      s,
      entry,
      { session_id: ids.sessionId, task_id: ids.taskId, role, op },
      { ok: false, error, provenance: null },
      true,
    );
  }
  const r = await moveToDeadLetters(s.nc, naming, role, s.stream, entry, reason, (n) => retryDelayMs(n));
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
  s: WorkerState,
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
      await s.publisher.publishInbox(input(outcome), { traceparent });
    } catch (err) {
      // an outcome we cannot send is still an outcome: report why instead of looping on it
      if (!(err instanceof AgentmeshError) || (err.code !== "payload_too_large" && err.code !== "invalid_message"))
        throw err;
      outcome = { ok: false, error: err.toWire(s.role), provenance: null };
      await s.publisher.publishInbox(input(outcome), { traceparent });
    }
  } catch (err) {
    if (entry.settled) return;
    entry.settled = true;
    const delay = retryDelayMs(m.info.deliveryCount);
    s.log.error(
      { ...s.what, task_id: task.task_id, err, delay_ms: delay },
      "cannot publish the task outcome; retrying the task later",
    );
    m.nak(delay);
    if (!counted) s.settled(task.op, "redelivered", m.info.deliveryCount);
    return;
  }
  s.crash("after-result-publish");
  s.crash("before-ack");
  if (entry.settled) return;
  entry.settled = true;
  if (outcome.ok) s.counts.processed++;
  else s.counts.failed++;
  if (!counted) s.settled(task.op, outcome.ok ? "completed" : "failed", m.info.deliveryCount);
  // A plain ack, not a confirmed one: a lost ack only means a redelivery, whose result is
  // de-duplicated, and waiting for the server's confirmation cost a request per task.
  m.ack();
}

/** The log fields of one delivery of a task. */
type TaskLog = Record<string, string | number>;

/** One delivery: read and route it, settle it early when it cannot or need not run, else work it and settle. */
async function handleTask(s: WorkerState, entry: InFlight): Promise<void> {
  const m = entry.msg;
  const deliveryCount = m.info.deliveryCount;
  if (deliveryCount > 1) s.counts.redelivered++;
  const task = await readRoutedTask(s, entry);
  if (task === null) return;
  const tlog = { ...s.what, task_id: task.task_id, session_id: task.session_id, op: task.op, delivery: deliveryCount };
  const now = s.clock();
  if (await settledBeforeWork(s, entry, task, tlog, now)) return;
  s.crash("after-fetch");
  const outcome = await workTask(s, entry, task, now);
  return settleOutcome(s, entry, task, tlog, outcome);
}

/** The delivery's task, or null once an unreadable or misrouted one has been handled as unworkable. */
async function readRoutedTask(s: WorkerState, entry: InFlight): Promise<TaskEnvelope | null> {
  const { role, naming } = s;
  const m = entry.msg;
  const d = decodeMessage(m.data, TaskEnvelope, "task");
  if (!d.ok) {
    await unworkable(s, entry, d.code, d.reason, true);
    return null;
  }
  const task = d.value;
  // misrouted: this role may not answer for another one, so only the dead letters can keep it
  if (task.role !== role) {
    await unworkable(
      s,
      entry,
      "invalid_message",
      `task for role "${task.role}" arrived on the "${role}" consumer`,
      false,
    );
    return null;
  }
  if (m.subject !== naming.task(task.role, task.op)) {
    await unworkable(s, entry, "invalid_message", `task for ${task.role}.${task.op} arrived on ${m.subject}`, false);
    return null;
  }
  return task;
}

/**
 * Settles a task that is not to be worked now: not due yet (nak until its time), past its
 * deadline, or of a cancelled session (both reported as failures). True when it did.
 */
async function settledBeforeWork(
  s: WorkerState,
  entry: InFlight,
  task: TaskEnvelope,
  tlog: TaskLog,
  now: number,
): Promise<boolean> {
  const { role, log } = s;
  const deliveryCount = entry.msg.info.deliveryCount;
  // A backed-off retry that arrived early goes back until its time (one delivery; the last one is worked at once).
  if (task.not_before !== undefined && task.not_before > now && deliveryCount < s.maxDeliver) {
    const delay = task.not_before - now;
    log.debug({ ...tlog, delay_ms: delay }, "task not due yet; nak until its time");
    entry.settled = true;
    entry.msg.nak(delay);
    s.settled(task.op, "redelivered", deliveryCount);
    return true;
  }
  if (task.deadline_at !== null && task.deadline_at <= now) {
    log.warn(tlog, "task deadline already passed; reporting deadline_exceeded without working it");
    s.settled(task.op, "dropped", deliveryCount);
    const error = wireFailure(
      "deadline_exceeded",
      `task ${task.task_id} reached the ${role} agent ${now - task.deadline_at} ms after its deadline`,
      role,
    );
    await report(s, entry, task, { ok: false, error, provenance: null }, true);
    return true;
  }
  if (await sessionCancelled(s, task.session_id)) {
    log.info(tlog, "session was cancelled before this task started; reporting cancelled without working it");
    s.settled(task.op, "dropped", deliveryCount);
    const error = wireFailure(
      "cancelled",
      `session ${task.session_id} was cancelled before task ${task.task_id} started`,
      role,
    );
    await report(s, entry, task, { ok: false, error, provenance: null }, true);
    return true;
  }
  return false;
}

/**
 * Runs the handler under the task's controller (aborted by its deadline or a cancel notice) and
 * returns its checked outcome; a throw or an invalid outcome becomes a typed failure.
 */
async function workTask(s: WorkerState, entry: InFlight, task: TaskEnvelope, now: number): Promise<TaskOutcome> {
  const { role } = s;
  const m = entry.msg;
  const deliveryCount = m.info.deliveryCount;
  const controller = entry.controller;
  let running = s.bySession.get(task.session_id);
  if (!running) s.bySession.set(task.session_id, (running = new Set()));
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
    const result = await s.handler(task, {
      deliveryCount,
      lastDelivery: deliveryCount >= s.maxDeliver,
      signal: controller.signal,
      traceparent: traceparentOf(m.headers),
      threadId: readHeader(m.headers, HEADERS.threadId),
    });
    outcome = checkedOutcome(result, role);
  } catch (err) {
    outcome = { ok: false, error: thrownToWire(err, controller.signal, role), provenance: null };
  } finally {
    clearTimeout(deadline);
    running.delete(controller);
    if (running.size === 0) s.bySession.delete(task.session_id);
  }
  // A failure returned after the signal was aborted is the abort's doing: report its reason
  // (deadline passed, session cancelled), as for a throw, not e.g. the model port's "cancelled".
  if (!outcome.ok && controller.signal.aborted && controller.signal.reason instanceof AgentmeshError) {
    outcome = { ...outcome, error: controller.signal.reason.toWire(role) };
  }
  return outcome;
}

/** The handler's result when it is a valid outcome, else an internal failure that says why not. */
function checkedOutcome(result: unknown, role: string): TaskOutcome {
  const checked = compiled(TaskOutcome).safeParse(result);
  return checked.success
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
}

/** After the handler: nak on shutdown or a retryable failure with deliveries left, else report. */
async function settleOutcome(
  s: WorkerState,
  entry: InFlight,
  task: TaskEnvelope,
  tlog: TaskLog,
  outcome: TaskOutcome,
): Promise<void> {
  const m = entry.msg;
  const deliveryCount = m.info.deliveryCount;
  if (entry.settled) return;
  if (entry.controller.signal.reason === SHUTDOWN) {
    entry.settled = true;
    m.nak();
    s.settled(task.op, "redelivered", deliveryCount);
    return;
  }
  if (!outcome.ok && outcome.error.retryable && deliveryCount < s.maxDeliver) {
    const delay = retryDelayMs(deliveryCount);
    s.log.warn(
      { ...tlog, code: outcome.error.code, delay_ms: delay, error: outcome.error.message },
      "retryable failure; nak with delay",
    );
    entry.settled = true;
    m.nak(delay);
    s.settled(task.op, "redelivered", deliveryCount);
    return;
  }
  if (!outcome.ok)
    s.log.warn(
      { ...tlog, code: outcome.error.code, error: outcome.error.message },
      "task failed; reporting the failure",
    );
  return report(s, entry, task, outcome);
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
