import type { Context, Env, Hono } from "hono";
import { HTTP_SECONDS_BUCKETS, METRIC_CATALOGUE, type Metrics } from "@agentmesh/service-kit";
import type { BufferedTotal } from "./stream.js";

/** What the HTTP metrics read at each scrape. */
export interface HttpGauges {
  /** `/api` SSE streams open now. */
  readonly apiStreams: () => number;
  /** `/v1` answers open now. */
  readonly v1Answers: () => number;
  readonly buffered: BufferedTotal;
}

/**
 * The route pattern that answered (`/api/v1/sessions/:id`): a label from the app's own routes, so
 * a client's paths never become series; `unmatched` when none did (a 404).
 */
function routeOf(c: Context): string {
  const handler = c.req.matchedRoutes.filter((r) => r.method !== "ALL").at(-1);
  return handler?.path ?? "unmatched";
}

/**
 * Counts every request by route and status and times it to its response's head, and samples the
 * open streams and the bytes they hold at each scrape (docs/tracing-and-metrics.md). First in the
 * chain, so refusals (401, 413, 429) are counted too. Returns what removes the samplers.
 */
export function mountHttpMetrics<E extends Env>(app: Hono<E>, metrics: Metrics, g: HttpGauges): () => void {
  const requests = metrics.counter(METRIC_CATALOGUE.httpRequests);
  const duration = metrics.histogram({ ...METRIC_CATALOGUE.httpDuration, buckets: HTTP_SECONDS_BUCKETS });
  app.use("*", async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = routeOf(c);
      requests.inc({ route, status: String(c.res.status) });
      duration.observe({ route }, (performance.now() - started) / 1000);
    }
  });
  const streams = metrics.sampledGauge({
    ...METRIC_CATALOGUE.httpOpenStreams,
    sample: (gauge) => {
      gauge.set({ kind: "api" }, g.apiStreams());
      gauge.set({ kind: "v1" }, g.v1Answers());
    },
  });
  const bytes = metrics.sampledGauge({
    ...METRIC_CATALOGUE.httpBufferedBytes,
    sample: (gauge) => gauge.set({}, g.buffered.bytes),
  });
  return () => {
    streams();
    bytes();
  };
}
