import type { Naming } from "@agentmesh/contracts";
import type { ConsumerLagReader, InboxHandler, Worker } from "@agentmesh/messaging";
import type { SessionStore } from "@agentmesh/session-store";
import {
  METRIC_CATALOGUE as M,
  consumerLagGauges,
  STEP_SECONDS_BUCKETS,
  type Logger,
  type Metrics,
} from "@agentmesh/service-kit";
import type { CoordinatorStats } from "./core.js";

/** What a coordinator reports to its process's metrics registry. */
export interface CoordinatorMetrics {
  /** The store, with every committed transition and every lost compare-and-set counted. */
  store(store: SessionStore): SessionStore;
  /** The inbox handler, timed, with the sessions it is stepping and its redeliveries counted. */
  handler(handler: InboxHandler): InboxHandler;
  /** Reads the core's and the inbox consumer's counters and the inbox backlog at each scrape; returns the removal. */
  watch(stats: CoordinatorStats, inbox: Worker): () => void;
}

/** The coordinator's metrics in `metrics` (the process's registry), its inbox lag read with `lag`. */
export function coordinatorMetrics(
  metrics: Metrics,
  opts: { naming: Naming; lag: ConsumerLagReader; log: Logger },
): CoordinatorMetrics {
  const stream = opts.naming.streams.inbox;
  const consumer = opts.naming.consumers.coordinator;
  const transitions = metrics.counter(M.transitions);
  const conflicts = metrics.counter(M.casConflicts);
  const steps = metrics.histogram({ ...M.stepDuration, buckets: STEP_SECONDS_BUCKETS });
  const stepping = metrics.gauge(M.sessionsInFlight);
  const redeliveries = metrics.counter(M.redeliveries);

  return {
    store(store) {
      // The one write of a transition: a commit that lands is a transition, a `conflict` is a CAS race lost.
      const metered: SessionStore = Object.create(store) as SessionStore;
      metered.commit = async (req) => {
        const res = await store.commit(req);
        const { workflow, status } = req.state.meta;
        if (res.ok) transitions.inc({ workflow, status });
        else if (res.reason === "conflict") conflicts.inc({ workflow });
        return res;
      };
      return metered;
    },
    handler: (handler) => async (input, ctx) => {
      if (ctx.deliveryCount > 1) redeliveries.inc({ consumer });
      stepping.inc({});
      const started = performance.now();
      let result = "error";
      try {
        const verdict = await handler(input, ctx);
        result = verdict;
        return verdict;
      } finally {
        stepping.dec({});
        steps.observe({ kind: input.kind, result }, (performance.now() - started) / 1000);
      }
    },
    watch(stats, inbox) {
      const removals = [
        metrics.readCounter({
          ...M.inputsDropped,
          read: () => {
            const consumed = inbox.stats;
            const forgedAtConsumer = consumed.forged ?? 0;
            return [
              { labels: { reason: "forged" }, value: stats.forged + forgedAtConsumer },
              { labels: { reason: "stale" }, value: stats.dropped - stats.forged - stats.lost_version },
              { labels: { reason: "lost_version" }, value: stats.lost_version },
              { labels: { reason: "duplicate" }, value: stats.duplicates },
              { labels: { reason: "unreadable" }, value: consumed.dropped - forgedAtConsumer },
            ];
          },
        }),
        metrics.readCounter({
          ...M.submits,
          read: () => [
            { labels: { result: "accepted" }, value: stats.submitted },
            { labels: { result: "rejected" }, value: stats.rejected },
          ],
        }),
        consumerLagGauges(metrics, { lag: opts.lag, stream, consumer, log: opts.log }),
      ];
      return () => removals.forEach((remove) => remove());
    },
  };
}
