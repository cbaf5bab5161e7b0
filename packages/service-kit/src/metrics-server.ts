import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AgentmeshError } from "@agentmesh/contracts";
import type { Logger } from "pino";
import type { MetricsSettings } from "./env.js";
import { createMetrics, type Metrics } from "./metrics.js";

/** A running metrics endpoint. */
export interface MetricsServer {
  /** `http://host:port/metrics`, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and ends open connections (a scraper's keep-alive must not hold up a drain). */
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (and HEAD) from `metrics` on a plain node:http server: nothing else is
 * routed, so the port exposes no API. A collection failure is a 500 with one line, never a stack.
 */
export async function startMetricsServer(metrics: Metrics, opts: { host: string; port: number; log: Logger }): Promise<MetricsServer> {
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found: metrics are at /metrics\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end("method not allowed\n");
      return;
    }
    metrics.text().then(
      (body) => {
        res.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" });
        res.end(req.method === "HEAD" ? undefined : body);
      },
      (err: unknown) => {
        opts.log.warn({ err }, "metrics collection failed");
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("metrics collection failed\n");
      },
    );
  };
  const server = createServer(serve);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(new AgentmeshError("invalid_config", `cannot serve metrics on ${opts.host}:${opts.port} (AGENTMESH_METRICS_HOST/AGENTMESH_METRICS_PORT): ${err.code ?? err.message}`));
    });
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  const url = `http://${host}:${port}/metrics`;
  opts.log.info({ metrics_url: url }, "serving metrics");
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A process's metrics: the registry and its endpoint, or neither when metrics are off. */
export interface ProcessMetrics {
  readonly metrics: Metrics;
  readonly server: MetricsServer;
}

/**
 * The metrics of a process from its settings: null when off (nothing is kept, no collector
 * runs); otherwise a fresh registry with the default Node metrics, served at once.
 */
export async function startProcessMetrics(settings: MetricsSettings | null, log: Logger): Promise<ProcessMetrics | null> {
  if (settings === null) return null;
  const metrics = createMetrics();
  const server = await startMetricsServer(metrics, { host: settings.host, port: settings.port, log });
  return { metrics, server };
}
