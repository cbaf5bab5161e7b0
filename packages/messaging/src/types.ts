import type { InboxInput, Naming, OutboxEntry, TaskEnvelope, TaskOutcome, WireError } from "@agentmesh/contracts";

/** Stream and consumer settings, provisioned once, idempotently. */
export interface ProvisionOptions {
  readonly naming: Naming;
  /** Roles whose task consumers to create (one durable pull consumer per role). */
  readonly roles: readonly string[];
  /** Task lease: the agent calls working() every ackWait/3. */
  readonly taskAckWaitMs: number;
  /** Deliveries of one task before it is failed and dead-lettered. */
  readonly taskMaxDeliver: number;
  /** Inbox lease for coordinators. */
  readonly inboxAckWaitMs: number;
  readonly inboxMaxDeliver: number;
  /** How long events are kept for replay. */
  readonly eventsMaxAgeMs: number;
  /** JetStream de-dup window (an optimisation; correctness never depends on it). */
  readonly duplicateWindowMs: number;
  /** Global in-flight cap per role consumer (max_ack_pending). */
  readonly maxAckPendingPerRole: number;
  /** Global in-flight cap of the coordinator inbox consumer; default 1000. */
  readonly inboxMaxAckPending?: number;
  /** How long dead letters are kept; default 7 days. */
  readonly deadMaxAgeMs?: number;
  /** How long a session stays in the cancelled-sessions KV bucket (agents skip its queued tasks); default 1 day. */
  readonly cancelledTtlMs?: number;
  /** Stream replicas (3 on a production cluster); default 1. Raising it on existing streams moves them (docs/nats-cluster.md). */
  readonly replicas?: number;
  /** How long failures a cluster shows while a node restarts or elects a leader are retried; default 60 s. */
  readonly retryForMs?: number;
}

/** Named points where a process may crash on purpose (AGENTMESH_CRASH_AT); a no-op when unset. */
export type CrashHook = (point: string) => void;

/** Context given to a task handler. */
export interface TaskContext {
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  /** True on the last delivery the consumer allows. */
  readonly lastDelivery: boolean;
  /** Aborted on a session cancel broadcast, on shutdown, or at the task deadline. */
  readonly signal: AbortSignal;
  /** The task message's traceparent (the coordinator's transition span), when valid. */
  readonly traceparent?: string | undefined;
  /** The session's thread, from the task message's headers. */
  readonly threadId?: string | undefined;
}

/**
 * What a task handler returns: an outcome to report. A retryable failure (or a throw) before the
 * last delivery is nak'd with a delay instead of reported.
 */
export type TaskHandler = (task: TaskEnvelope, ctx: TaskContext) => Promise<TaskOutcome>;

/** How one delivery of a task ended, for metrics: worked and reported, not worked, or left to a later delivery. */
export type TaskSettlement = "completed" | "failed" | "dropped" | "redelivered";

/**
 * Told once per delivery when the worker settles it. `op` is the task's op as it arrived (empty
 * when unreadable): bound it before using it as a label.
 */
export type TaskSettledHook = (s: {
  readonly op: string;
  readonly settlement: TaskSettlement;
  readonly deliveryCount: number;
}) => void;

/** Counts of JetStream work, reported in the `$SRV` STATS `data` field. */
export interface WorkStats {
  /** Messages finished successfully (task: ok outcome reported; inbox: acked). */
  processed: number;
  /** Task: failure outcomes reported (incl. past deadline); inbox: handler throws. */
  failed: number;
  /** Deliveries that were not the first. */
  redelivered: number;
  /** Messages being worked on now. */
  in_flight: number;
  /** Malformed, oversized, wrong-version or misrouted messages terminated without processing. */
  dropped: number;
  /** Inbox: inputs whose subject's sender may not write them (a forged result, start or cancel); also in `dropped`. */
  forged?: number;
}

/** A running consumer (a role's task worker or a coordinator's inbox consumer). */
export interface Worker {
  /** A snapshot of the counters. */
  readonly stats: WorkStats;
  /** True while the consume loop is alive. */
  alive(): boolean;
  /** Stops fetching, waits for in-flight work up to graceMs, then aborts it and naks the rest. */
  stop(graceMs: number): Promise<void>;
}

/** Context given to an inbox handler. */
export interface InboxContext {
  readonly deliveryCount: number;
  /** Aborted when stop() gives up waiting. */
  readonly signal: AbortSignal;
}

/** A handled inbox message says whether to ack or to leave it for redelivery. */
export type InboxHandler = (input: InboxInput, ctx: InboxContext) => Promise<"ack" | "retry">;

/** Outbox publisher: publishes tasks, events and cancel notices with their de-dup ids. */
export type PublishOutbox = (entries: readonly OutboxEntry[]) => Promise<void>;

export type { WireError };
