import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import { ROLE_NAMES, type Naming } from "@agentmesh/contracts";
import type { SessionStore } from "@agentmesh/session-store";
import {
  consumerLagReader,
  createMicroService,
  createPublisher,
  provision,
  startDeadLetterMover,
  startInboxConsumer,
  traceparentOf,
  type CrashHook,
  type InboxHandler,
  type MicroService,
  type Worker,
} from "@agentmesh/messaging";
import type { RuntimeDefaults } from "@agentmesh/workflows";
import type { Logger, Metrics, Stoppable, Tracing } from "@agentmesh/service-kit";
import { createCoordinatorCore, type CoordinatorCore } from "./core.js";
import { coordinatorMetrics } from "./metrics.js";

export interface CoordinatorServiceOptions {
  readonly nc: NatsConnection;
  readonly store: SessionStore;
  readonly naming: Naming;
  readonly log: Logger;
  readonly defaults: RuntimeDefaults;
  readonly concurrency: number;
  readonly taskAckWaitMs: number;
  readonly inboxAckWaitMs: number;
  readonly taskMaxDeliver: number;
  /** How long a session stays in the cancelled-sessions KV bucket; default 1 day. */
  readonly cancelledTtlMs?: number;
  /** Replicas of every stream and of the KV bucket; default 1. */
  readonly streamReplicas?: number;
  readonly crash?: CrashHook;
  readonly timerPollMs?: number;
  /** Whether the store answers (readiness); e.g. the Redis client's status is "ready". */
  readonly storeReady?: () => boolean;
  readonly version?: string;
  /** Where transition and session spans go (default off). */
  readonly tracing?: Tracing;
  /** The process's metrics registry; without one the coordinator keeps no metrics. */
  readonly metrics?: Metrics;
}

/** A running coordinator replica. */
export interface RunningCoordinator extends Stoppable {
  readonly core: CoordinatorCore;
  readonly inbox: Worker;
  /** For `/readyz`: null while its inbox consume loop runs (its `$SRV` service answers from start), else why not. */
  whyNotReady(): string | null;
}

/**
 * Starts one coordinator replica: provisions streams (idempotent), serves `<p>.submit` as a
 * micro-service endpoint, consumes the shared inbox, and polls due timers. Any number of
 * replicas may run at once.
 */
export async function startCoordinator(opts: CoordinatorServiceOptions): Promise<RunningCoordinator> {
  const log = opts.log.child({ role: "coordinator" });
  await provisionStreams(opts);
  const publisher = createPublisher(opts.nc, opts.naming, log);
  const metrics = opts.metrics
    ? coordinatorMetrics(opts.metrics, { naming: opts.naming, lag: consumerLagReader(opts.nc), log })
    : null;
  const store = metrics ? metrics.store(opts.store) : opts.store;
  const core = createCoordinatorCore({
    store,
    publisher,
    log,
    defaults: opts.defaults,
    crash: opts.crash,
    ...(opts.tracing ? { tracing: opts.tracing } : {}),
  });
  const step: InboxHandler = (input) => core.handleInput(input);
  const inbox = await startInboxConsumer(opts.nc, {
    naming: opts.naming,
    concurrency: opts.concurrency,
    ackWaitMs: opts.inboxAckWaitMs,
    handler: metrics ? metrics.handler(step) : step,
    log,
    crash: opts.crash,
  });
  const unwatch = metrics?.watch(core.stats, inbox);
  const deadLetters = await startDeadLetterMover(opts.nc, { naming: opts.naming, log });
  const micro = await serveSubmit(opts, core, inbox);
  // the server has the `$SRV` and submit subscriptions once this returns: ready means answering
  await opts.nc.flush();
  const stopTimers = pollDueTimers(core, log, opts.timerPollMs ?? 500);

  return {
    core,
    inbox,
    whyNotReady: () => (inbox.alive() ? null : "coordinator: inbox consume loop not running"),
    async stop(graceMs: number) {
      stopTimers();
      await micro.stop();
      await inbox.stop(graceMs);
      unwatch?.();
      await deadLetters.stop();
    },
  };
}

/** Provisions the streams, consumers and KV bucket with the coordinator's settings (idempotent). */
async function provisionStreams(opts: CoordinatorServiceOptions): Promise<void> {
  await provision(opts.nc, {
    naming: opts.naming,
    roles: ROLE_NAMES,
    taskAckWaitMs: opts.taskAckWaitMs,
    taskMaxDeliver: opts.taskMaxDeliver,
    inboxAckWaitMs: opts.inboxAckWaitMs,
    inboxMaxDeliver: 20,
    eventsMaxAgeMs: 7 * 24 * 3600 * 1000,
    duplicateWindowMs: 10 * 60 * 1000,
    maxAckPendingPerRole: 1000,
    ...(opts.cancelledTtlMs ? { cancelledTtlMs: opts.cancelledTtlMs } : {}),
    ...(opts.streamReplicas ? { replicas: opts.streamReplicas } : {}),
  });
}

/** Registers the replica's `$SRV` micro service (its stats and liveness) and serves `<p>.submit` on it to the `coordinators` queue group. */
async function serveSubmit(
  opts: CoordinatorServiceOptions,
  core: CoordinatorCore,
  inbox: Worker,
): Promise<MicroService> {
  const micro = await createMicroService(opts.nc, {
    name: "coordinator",
    version: opts.version ?? "0.1.0",
    description: "Drives sessions: submit, step the workflow, persist, dispatch",
    metadata: { prefix: opts.naming.prefix, kind: "coordinator", host: hostname() },
    statsData: () => ({
      ...core.stats,
      inbox: { ...inbox.stats },
      alive: inbox.alive() && (opts.storeReady?.() ?? true),
      store_ready: opts.storeReady?.() ?? true,
    }),
  });
  await micro.addEndpoint(
    "submit",
    opts.naming.submit,
    (body: unknown, headers) => core.submit(body, { traceparent: traceparentOf(headers) }),
    { queue: "coordinators" },
  );
  return micro;
}

/** Fires due timers every `everyMs`, one poll at a time (a failed poll is logged); returns what stops the polling. */
function pollDueTimers(core: CoordinatorCore, log: Logger, everyMs: number): () => void {
  let polling = false;
  const poll = () => {
    if (polling) return;
    polling = true;
    core.fireDueTimers().then(
      () => {
        polling = false;
      },
      (err: unknown) => {
        polling = false;
        log.warn({ err }, "timer poll failed");
      },
    );
  };
  const timerLoop = setInterval(poll, everyMs);
  return () => clearInterval(timerLoop);
}
