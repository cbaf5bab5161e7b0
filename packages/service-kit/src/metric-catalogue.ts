import type { Logger } from "./logger.js";
import type { MetricLabel, Metrics } from "./metrics.js";

/** One metric agentmesh exports: what the metrics table of docs/tracing-and-metrics.md lists about it. */
export interface CatalogueEntry {
  readonly name: string;
  readonly type: "counter" | "gauge" | "histogram";
  readonly help: string;
  readonly labels: readonly MetricLabel[];
  /** Which processes export it. */
  readonly by: "agents" | "coordinator" | "agents, coordinator" | "gateway";
}

/**
 * Every metric of ours, in one place: components register them from here (so a name and its help
 * are written once, even where the agents and the coordinator share one), and a test checks the
 * docs page's table against this list.
 */
export const METRIC_CATALOGUE = {
  tasks: {
    name: "agentmesh_tasks_total",
    type: "counter",
    by: "agents",
    labels: ["role", "op", "outcome"],
    help: "Task deliveries by how they ended: completed or failed (reported to the session), dropped (not worked: unreadable, cancelled, past its deadline), redelivered (left to a later delivery: retryable failure, shutdown)",
  },
  taskDuration: {
    name: "agentmesh_task_duration_seconds",
    type: "histogram",
    by: "agents",
    labels: ["role", "op"],
    help: "Time an agent worked one task delivery (model and tool calls included)",
  },
  tasksInFlight: {
    name: "agentmesh_tasks_in_flight",
    type: "gauge",
    by: "agents",
    labels: ["role"],
    help: "Tasks a role is working in this process now",
  },
  modelCalls: {
    name: "agentmesh_model_calls_total",
    type: "counter",
    by: "agents",
    labels: ["role", "op", "model"],
    help: "Model calls that answered (the offline engine makes none)",
  },
  inputTokens: {
    name: "agentmesh_model_input_tokens_total",
    type: "counter",
    by: "agents",
    labels: ["role", "op", "model"],
    help: "Prompt tokens the model endpoint reported",
  },
  outputTokens: {
    name: "agentmesh_model_output_tokens_total",
    type: "counter",
    by: "agents",
    labels: ["role", "op", "model"],
    help: "Completion tokens the model endpoint reported",
  },
  cost: {
    name: "agentmesh_model_cost_usd_total",
    type: "counter",
    by: "agents",
    labels: ["role", "op", "model"],
    help: "Cost of model calls in USD, from AGENTMESH_LLM_PRICES",
  },
  redeliveries: {
    name: "agentmesh_redeliveries_total",
    type: "counter",
    by: "agents, coordinator",
    labels: ["consumer"],
    help: "JetStream deliveries that were not a message's first (delivery count > 1)",
  },
  consumerPending: {
    name: "agentmesh_consumer_pending_messages",
    type: "gauge",
    by: "agents, coordinator",
    labels: ["stream", "consumer"],
    help: "Messages waiting for a durable consumer (num_pending), read from the server at each scrape",
  },
  consumerAckPending: {
    name: "agentmesh_consumer_ack_pending_messages",
    type: "gauge",
    by: "agents, coordinator",
    labels: ["stream", "consumer"],
    help: "Messages delivered to a durable consumer and not yet acked (num_ack_pending), read at each scrape",
  },
  transitions: {
    name: "agentmesh_transitions_total",
    type: "counter",
    by: "coordinator",
    labels: ["workflow", "status"],
    help: "Transitions committed, by workflow and the session's status after the transition",
  },
  stepDuration: {
    name: "agentmesh_step_duration_seconds",
    type: "histogram",
    by: "coordinator",
    labels: ["kind", "result"],
    help: "Time to handle one inbox input (load, step, compare-and-set, publish), by input kind and result (ack, retry, error)",
  },
  sessionsInFlight: {
    name: "agentmesh_sessions_in_flight",
    type: "gauge",
    by: "coordinator",
    labels: [],
    help: "Inbox inputs (sessions) this coordinator is stepping now",
  },
  casConflicts: {
    name: "agentmesh_cas_conflicts_total",
    type: "counter",
    by: "coordinator",
    labels: ["workflow"],
    help: "Compare-and-set commits lost to another coordinator (each is re-loaded and re-stepped)",
  },
  inputsDropped: {
    name: "agentmesh_inputs_dropped_total",
    type: "counter",
    by: "coordinator",
    labels: ["reason"],
    help: "Inbox inputs not applied: forged (sender may not write it), stale (not awaited, session ended or unknown), lost_version (a task of a version the store lost in a Redis failover: docs/redis-failover.md), duplicate (already applied), unreadable (dead-lettered)",
  },
  submits: {
    name: "agentmesh_submits_total",
    type: "counter",
    by: "coordinator",
    labels: ["result"],
    help: "Submit requests, accepted or rejected",
  },
  httpRequests: {
    name: "agentmesh_http_requests_total",
    type: "counter",
    by: "gateway",
    labels: ["route", "status"],
    help: "HTTP requests answered, by route pattern (`/api/v1/sessions/:id`, `unmatched` for none) and status code",
  },
  httpDuration: {
    name: "agentmesh_http_request_duration_seconds",
    type: "histogram",
    by: "gateway",
    labels: ["route"],
    help: "Time from a request's arrival to its response's head (for a stream: until it opens)",
  },
  httpOpenStreams: {
    name: "agentmesh_http_open_streams",
    type: "gauge",
    by: "gateway",
    labels: ["kind"],
    help: "Streams this replica serves now: `api` (SSE of /api) and `v1` (Chat Completions answers, streamed or not)",
  },
  httpBufferedBytes: {
    name: "agentmesh_http_stream_buffered_bytes",
    type: "gauge",
    by: "gateway",
    labels: [],
    help: "Bytes of events and deltas the open streams hold for clients that have not read them yet",
  },
} as const satisfies Record<string, CatalogueEntry>;

/** What a consumer-lag reader returns (messaging's `ConsumerLagReader`, typed here by shape). */
export type ReadConsumerLag = (
  stream: string,
  consumer: string,
) => Promise<{ readonly pending: number; readonly ackPending: number }>;

/**
 * The two backlog gauges of one durable consumer (pending, ack-pending), read from the server at
 * scrape time; a failed read leaves them unset and is logged at debug. Returns their removal.
 */
export function consumerLagGauges(
  metrics: Metrics,
  o: { lag: ReadConsumerLag; stream: string; consumer: string; log: Logger },
): () => void {
  const { stream, consumer } = o;
  const removals = [
    metrics.sampledGauge({
      ...METRIC_CATALOGUE.consumerPending,
      sample: async (g) => {
        const lag = await o
          .lag(stream, consumer)
          .catch((err: unknown) => void o.log.debug({ err, consumer }, "consumer lag not read"));
        if (lag) g.set({ stream, consumer }, lag.pending);
      },
    }),
    metrics.sampledGauge({
      ...METRIC_CATALOGUE.consumerAckPending,
      sample: async (g) => {
        const lag = await o.lag(stream, consumer).catch(() => undefined);
        if (lag) g.set({ stream, consumer }, lag.ackPending);
      },
    }),
  ];
  return () => removals.forEach((remove) => remove());
}
