import { findOp, type Naming } from "@agentmesh/contracts";
import type { ModelPort, ModelReply, ModelRequest } from "@agentmesh/llm";
import type { ConsumerLagReader, TaskHandler, TaskSettledHook, Worker } from "@agentmesh/messaging";
import {
  METRIC_CATALOGUE as M,
  consumerLagGauges,
  TASK_SECONDS_BUCKETS,
  type Logger,
  type Metrics,
} from "@agentmesh/service-kit";

/** What one agent role reports to its process's metrics registry. */
export interface RoleMetrics {
  /** The worker's settlement hook: tasks by outcome, and redeliveries. */
  readonly onSettled: TaskSettledHook;
  /** The handler, timed. */
  timed(handler: TaskHandler): TaskHandler;
  /** The model port, counting every answered call's tokens and cost. */
  metered(model: ModelPort): ModelPort;
  /** Samples the worker's in-flight count and its consumer's backlog at each scrape; returns the removal. */
  watch(worker: Worker): () => void;
}

/** An op as a label: one of the role's ops in the registry, or `unknown` (a label never takes wire text as it came). */
const opLabel = (role: string, op: string): string => (findOp(role, op) ? op : "unknown");

/** The model port, with every answered call counted under the request's role and op and the reply's model. */
function meteredModel(model: ModelPort, metrics: Metrics): ModelPort {
  const calls = metrics.counter(M.modelCalls);
  const input = metrics.counter(M.inputTokens);
  const output = metrics.counter(M.outputTokens);
  const cost = metrics.counter(M.cost);
  const complete = async (req: ModelRequest): Promise<ModelReply<unknown>> => {
    const reply = await (model.complete as (r: ModelRequest) => Promise<ModelReply<unknown>>)(req);
    const labels = { role: req.role, op: opLabel(req.role, req.op), model: reply.model };
    calls.inc(labels, reply.usage.model_calls);
    input.inc(labels, reply.usage.prompt_tokens);
    output.inc(labels, reply.usage.completion_tokens);
    cost.inc(labels, reply.usage.cost_usd);
    return reply;
  };
  return { name: model.name, complete: complete as ModelPort["complete"] };
}

/** The metrics of one role in `metrics` (the process's registry), its consumer's lag read with `lag`. */
export function roleMetrics(
  metrics: Metrics,
  opts: { role: string; naming: Naming; lag: ConsumerLagReader; log: Logger },
): RoleMetrics {
  const { role } = opts;
  const stream = opts.naming.streams.tasks;
  const consumer = opts.naming.consumers.role(role);
  const tasks = metrics.counter(M.tasks);
  const redeliveries = metrics.counter(M.redeliveries);
  const duration = metrics.histogram({ ...M.taskDuration, buckets: TASK_SECONDS_BUCKETS });
  return {
    onSettled: ({ op, settlement, deliveryCount }) => {
      tasks.inc({ role, op: opLabel(role, op), outcome: settlement });
      if (deliveryCount > 1) redeliveries.inc({ consumer });
    },
    timed: (handler) => async (task, ctx) => {
      const started = performance.now();
      try {
        return await handler(task, ctx);
      } finally {
        duration.observe({ role, op: opLabel(role, task.op) }, (performance.now() - started) / 1000);
      }
    },
    metered: (model) => meteredModel(model, metrics),
    watch(worker) {
      const removals = [
        metrics.sampledGauge({ ...M.tasksInFlight, sample: (g) => g.set({ role }, worker.stats.in_flight) }),
        consumerLagGauges(metrics, { lag: opts.lag, stream, consumer, log: opts.log }),
      ];
      return () => removals.forEach((remove) => remove());
    },
  };
}
