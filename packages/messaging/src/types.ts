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
}

/** What a task handler returns: an outcome to report, or a retryable failure to nak with delay. */
export type TaskHandler = (task: TaskEnvelope, ctx: TaskContext) => Promise<TaskOutcome>;

/** Counts of JetStream work, reported in the `$SRV` STATS `data` field. */
export interface WorkStats {
  processed: number;
  failed: number;
  redelivered: number;
  in_flight: number;
  dropped: number;
}

export interface Worker {
  readonly stats: WorkStats;
  /** True while the consume loop is alive. */
  alive(): boolean;
  /** Stops fetching, waits for in-flight tasks (bounded), naks the rest. */
  stop(graceMs: number): Promise<void>;
}

/** A handled inbox message says whether to ack or to leave it for redelivery. */
export type InboxHandler = (input: InboxInput, ctx: { readonly deliveryCount: number }) => Promise<"ack" | "retry">;

/** Outbox publisher: publishes tasks, events and cancel notices with their de-dup ids. */
export type PublishOutbox = (entries: readonly OutboxEntry[]) => Promise<void>;

export type { WireError };
