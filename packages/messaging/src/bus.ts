import type { NatsConnection } from "@nats-io/transport-node";
import {
  CancelNotice, InboxInput, SCHEMA_VERSION, TaskEnvelope, TaskOutcome as TaskOutcomeSchema, inputIds, wireError,
  type Naming, type OutboxEntry, type SessionEvent, type TaskOutcome,
} from "@agentmesh/contracts";
import { retryDelayMs } from "./decode.js";
import { AgentmeshError, toWireError } from "./errors.js";
import { startInboxConsumer, type InboxConsumerOptions } from "./inbox-consumer.js";
import type { Log } from "./log.js";
import { createPublisher, encodeBounded } from "./publisher.js";
import type { InboxHandler, TaskHandler, Worker, WorkStats } from "./types.js";
import { startWorker, type WorkerOptions } from "./worker.js";

/** What services need of the bus: publish, work a role's tasks, consume the session inbox. */
export interface Bus {
  publishTask(task: TaskEnvelope): Promise<void>;
  publishInbox(input: InboxInput): Promise<void>;
  publishEvent(event: SessionEvent): Promise<void>;
  publishCancel(notice: CancelNotice): Promise<void>;
  publishOutbox(entries: readonly OutboxEntry[]): Promise<void>;
  startWorker(opts: Omit<WorkerOptions, "naming">): Promise<Worker>;
  startInboxConsumer(opts: Omit<InboxConsumerOptions, "naming">): Promise<Worker>;
}

/** The bus over NATS JetStream (streams and consumers must be provisioned). */
export function createNatsBus(nc: NatsConnection, naming: Naming, log: Log): Bus {
  const p = createPublisher(nc, naming, log);
  return {
    publishTask: (t) => p.publishTask(t),
    publishInbox: (i) => p.publishInbox(i),
    publishEvent: (e) => p.publishEvent(e),
    publishCancel: (c) => p.publishCancel(c),
    publishOutbox: (o) => p.publishOutbox(o),
    startWorker: (o) => startWorker(nc, { ...o, naming }),
    startInboxConsumer: (o) => startInboxConsumer(nc, { ...o, naming }),
  };
}

interface Queued {
  readonly data: string;
  deliveries: number;
}

/** A work queue with de-duplication by message id and delayed redelivery. */
function workQueue() {
  const seen = new Set<string>();
  const ready: Queued[] = [];
  let wake: (() => void) | null = null;
  return {
    push(id: string, data: string): void {
      if (seen.has(id)) return;
      seen.add(id);
      ready.push({ data, deliveries: 0 });
      wake?.();
    },
    requeue(q: Queued, delayMs: number): void {
      setTimeout(() => { ready.push(q); wake?.(); }, delayMs).unref();
    },
    async take(stopped: () => boolean): Promise<Queued | null> {
      while (ready.length === 0) {
        if (stopped()) return null;
        await new Promise<void>((r) => { wake = r; setTimeout(r, 50).unref(); });
        wake = null;
      }
      return ready.shift() ?? null;
    },
  };
}

/**
 * The bus's in-memory twin: the same delivery rules as JetStream work queues (de-dup by id,
 * bounded in-flight, retryable failures redelivered with a computed delay, a typed failure on the
 * last delivery, past-deadline tasks not worked, cancel notices abort in-flight work), so tests
 * of services can run without a broker. It passes the same conformance suite as the NATS bus.
 */
export function createMemoryBus(opts: { naming: Naming; maxDeliver: number; inboxMaxDeliver?: number; now?: () => number }): Bus {
  const clock = opts.now ?? Date.now;
  const tasks = new Map<string, ReturnType<typeof workQueue>>();
  const inbox = workQueue();
  const running = new Map<string, Set<AbortController>>();
  const queueOf = (role: string) => {
    let q = tasks.get(role);
    if (!q) tasks.set(role, (q = workQueue()));
    return q;
  };

  const bus: Bus = {
    async publishTask(t) {
      const task = TaskEnvelope.parse(t);
      queueOf(task.role).push(task.task_id, new TextDecoder().decode(encodeBounded(task, "task")));
    },
    async publishInbox(i) {
      const input = InboxInput.parse(i);
      inbox.push(input.input_id, new TextDecoder().decode(encodeBounded(input, "inbox input")));
    },
    async publishEvent() {},
    async publishCancel(c) {
      const notice = CancelNotice.parse(c);
      for (const ac of running.get(notice.session_id) ?? []) ac.abort(new AgentmeshError("cancelled", `session ${notice.session_id} was cancelled`));
    },
    async publishOutbox(entries) {
      for (const e of entries) {
        if (e.kind === "task") await bus.publishTask(e.task);
        else if (e.kind === "event") await bus.publishEvent(e.event);
        else await bus.publishCancel(e.notice);
      }
    },
    async startWorker(o) {
      return loop(queueOf(o.role), o.concurrency, async (q, stats) => {
        const parsed = TaskEnvelope.safeParse(JSON.parse(q.data));
        if (!parsed.success || parsed.data.role !== o.role) { stats.dropped++; return "done"; }
        const task = parsed.data;
        const report = async (outcome: TaskOutcome) => {
          await bus.publishInbox({ v: SCHEMA_VERSION, kind: "result", session_id: task.session_id, input_id: inputIds.result(task.task_id), task_id: task.task_id, role: task.role, op: task.op, outcome });
          if (outcome.ok) stats.processed++;
          else stats.failed++;
        };
        if (task.deadline_at !== null && task.deadline_at <= clock()) {
          await report({ ok: false, error: wireError("deadline_exceeded", `task ${task.task_id} reached the ${o.role} agent after its deadline`, o.role), provenance: null });
          return "done";
        }
        const ac = new AbortController();
        const set = running.get(task.session_id) ?? new Set<AbortController>();
        running.set(task.session_id, set.add(ac));
        let outcome: TaskOutcome;
        try {
          outcome = await (o.handler as TaskHandler)(task, { deliveryCount: q.deliveries, lastDelivery: q.deliveries >= opts.maxDeliver, signal: ac.signal });
        } catch (err) {
          outcome = { ok: false, error: { ...toWireError(err, o.role), retryable: true }, provenance: null };
        } finally {
          set.delete(ac);
        }
        const checked = TaskOutcomeSchema.safeParse(outcome);
        if (!checked.success) outcome = { ok: false, error: wireError("internal", `the ${o.role} handler returned an invalid outcome: ${checked.error.issues[0]?.message ?? "?"}`, o.role), provenance: null };
        if (!outcome.ok && outcome.error.retryable && q.deliveries < opts.maxDeliver) return "retry";
        await report(outcome);
        return "done";
      }, (n) => retryDelayMs(n));
    },
    async startInboxConsumer(o) {
      return loop(inbox, o.concurrency, async (q, stats) => {
        const parsed = InboxInput.safeParse(JSON.parse(q.data));
        if (!parsed.success) { stats.dropped++; return "done"; }
        const r = await (o.handler as InboxHandler)(parsed.data, { deliveryCount: q.deliveries, signal: new AbortController().signal });
        if (r === "ack") { stats.processed++; return "done"; }
        return q.deliveries < (opts.inboxMaxDeliver ?? 20) ? "retry" : "done";
      }, (n) => retryDelayMs(n, { baseMs: 100, capMs: 5000 }));
    },
  };
  return bus;
}

/** Runs a consume loop with at most `concurrency` messages in flight. */
async function loop(
  q: ReturnType<typeof workQueue>,
  concurrency: number,
  work: (m: Queued, stats: WorkStats) => Promise<"done" | "retry">,
  delay: (deliveries: number) => number,
): Promise<Worker> {
  const stats: WorkStats = { processed: 0, failed: 0, redelivered: 0, in_flight: 0, dropped: 0 };
  let stopped = false;
  const inflight = new Set<Promise<void>>();
  const run = (async () => {
    while (!stopped) {
      if (inflight.size >= concurrency) { await Promise.race(inflight); continue; }
      const m = await q.take(() => stopped);
      if (!m) break;
      m.deliveries++;
      if (m.deliveries > 1) stats.redelivered++;
      stats.in_flight++;
      const p: Promise<void> = work(m, stats)
        .then((r) => { if (r === "retry") q.requeue(m, delay(m.deliveries)); }, () => q.requeue(m, delay(m.deliveries)))
        .finally(() => { stats.in_flight--; inflight.delete(p); });
      inflight.add(p);
    }
  })();
  return {
    stats,
    alive: () => !stopped,
    async stop(graceMs: number) {
      stopped = true;
      await Promise.race([Promise.allSettled([...inflight, run]), new Promise((r) => setTimeout(r, graceMs))]);
    },
  };
}
