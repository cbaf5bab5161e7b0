import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AgentmeshError } from "@agentmesh/contracts";
import type { Logger } from "pino";
import type { MetricsSettings } from "./env.js";
import type { Health, HealthVerdict } from "./health.js";
import { createMetrics, type Metrics } from "./metrics.js";

/** A running metrics endpoint (with the probes when the process gave its Health). */
export interface MetricsServer {
  /** `http://host:port/metrics`, with the port actually bound. */
  readonly url: string;
  /** `http://host:port`: the probes are `${origin}/readyz` and `${origin}/healthz`. */
  readonly origin: string;
  readonly port: number;
  /** Stops listening and ends open connections (a scraper's keep-alive must not hold up a drain). */
  close(): Promise<void>;
}

const TEXT = { "content-type": "text/plain; charset=utf-8" } as const;

/** A probe's answer: 200 or 503 with one line of JSON (the reason a person or kubectl reads). */
function answerProbe(res: ServerResponse, head: boolean, verdict: HealthVerdict, okStatus: string): void {
  const body = verdict.ok ? { status: okStatus } : { status: "fail", reason: verdict.reason };
  res.writeHead(verdict.ok ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(head ? undefined : `${JSON.stringify(body)}\n`);
}

/**
 * The process's ops endpoint on a plain node:http server: `GET /metrics` from `metrics`, and
 * with `health` the probes `GET /readyz` (ready: 200, else 503 with the reason) and `GET /healthz`
 * (alive). Nothing else is routed, so the port exposes no API. A collection failure is a 500 with
 * one line, never a stack.
 */
export async function startMetricsServer(
  metrics: Metrics,
  opts: { host: string; port: number; log: Logger; health?: Health },
): Promise<MetricsServer> {
  const health = opts.health;
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    const probe = health && (path === "/readyz" || path === "/healthz");
    if (path !== "/metrics" && !probe) {
      res
        .writeHead(404, TEXT)
        .end(
          health
            ? "not found: /metrics, /readyz and /healthz are served here\n"
            : "not found: metrics are at /metrics\n",
        );
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", ...TEXT }).end("method not allowed\n");
      return;
    }
    const head = req.method === "HEAD";
    if (probe) {
      if (path === "/readyz") answerProbe(res, head, health.readiness(), "ready");
      else answerProbe(res, head, health.liveness(), "alive");
      return;
    }
    metrics.text().then(
      (body) => {
        res.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" });
        res.end(head ? undefined : body);
      },
      (err: unknown) => {
        opts.log.warn({ err }, "metrics collection failed");
        res.writeHead(500, TEXT).end("metrics collection failed\n");
      },
    );
  };
  const server = createServer(serve);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        new AgentmeshError(
          "invalid_config",
          `cannot serve metrics on ${opts.host}:${opts.port} (AGENTMESH_METRICS_HOST/AGENTMESH_METRICS_PORT): ${err.code ?? err.message}`,
        ),
      );
    });
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  const origin = `http://${host}:${port}`;
  const url = `${origin}/metrics`;
  opts.log.info(
    { metrics_url: url, ...(health ? { probes: `${origin}/readyz, ${origin}/healthz` } : {}) },
    health ? "serving metrics and probes" : "serving metrics",
  );
  return {
    url,
    origin,
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
 * runs); otherwise a fresh registry with the default Node metrics, served at once, with the
 * probes answered from `health` when given.
 */
export async function startProcessMetrics(
  settings: MetricsSettings | null,
  log: Logger,
  health?: Health,
): Promise<ProcessMetrics | null> {
  if (settings === null) return null;
  const metrics = createMetrics();
  const server = await startMetricsServer(metrics, {
    host: settings.host,
    port: settings.port,
    log,
    ...(health ? { health } : {}),
  });
  return { metrics, server };
}
