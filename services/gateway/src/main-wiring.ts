import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import { serve } from "@hono/node-server";
import { naming as makeNaming, redactUrls } from "@agentmesh/contracts";
import { connectNats, createPublisher, linkHealth } from "@agentmesh/messaging";
import { connectRedis, createRedisSessionStore, redisHealth } from "@agentmesh/session-store";
import {
  createHealth,
  createLogger,
  createTracing,
  runUntilSignalled,
  secretsOf,
  startProcessMetrics,
} from "@agentmesh/service-kit";
import { createGatewayApp } from "./app.js";
import { createEventHub } from "./fanout.js";
import { loadGatewayConfig, type GatewayConfig } from "./config.js";
import { createRedisLimits } from "./limits.js";

/** The gateway process: config → NATS and Redis → HTTP server → run until SIGTERM, then drain. */
export async function gatewayMain(env: Record<string, string | undefined>): Promise<void> {
  const secrets = secretsOf(env);
  let log = createLogger({ service: "gateway", level: "info", secrets });
  // The ops port's probes (as every service has them; the API port keeps its own /readyz and /healthz).
  const health = createHealth();
  await runUntilSignalled({
    name: "gateway",
    log,
    secrets,
    health,
    start: async () => {
      const cfg = loadGatewayConfig(env);
      log = createLogger({ service: "gateway", level: cfg.logLevel as "info", secrets });
      // The process's own metrics (CPU, memory, event-loop lag) and probes on a port apart from the API.
      const metrics = await startProcessMetrics(cfg.metrics, log, health);
      log.info(
        { nats: redactUrls(cfg.natsUrl), redis: redactUrls(cfg.redisUrl) },
        "connecting (waits for NATS to come up)",
      );
      const { nc, redis } = await connect(cfg);
      health.requireLinks(linkHealth(nc), redisHealth(redis));
      const naming = makeNaming(cfg.prefix);
      const { store, limits } = redisStores(cfg, redis);
      const tracing = await createTracing({ serviceName: "gateway", config: cfg.tracing });
      // The replica's one reader of live events, running before the first stream needs it.
      const hub = createEventHub(nc, naming, log);
      // not fatal: before the events stream is provisioned the first stream tries again
      await hub
        .ready()
        .catch((err: unknown) =>
          log.warn({ err: (err as Error).message }, "live events feed not started yet; the first stream retries"),
        );
      const gw = createGatewayApp({
        hub,
        streamBufferBytes: cfg.streamBufferBytes,
        maxOpenStreams: cfg.maxOpenStreams,
        nc,
        naming,
        store,
        limits,
        log,
        submitTimeoutMs: 10_000,
        tracing,
        publisher: createPublisher(nc, naming, log, { client: true }),
        keys: cfg.keys,
        anonymous: cfg.anonymous,
        defaultWorkflow: cfg.defaultWorkflow,
        maxBodyBytes: cfg.maxBodyBytes,
        http: { allowedHosts: cfg.allowedHosts, corsOrigins: cfg.corsOrigins },
        metrics: metrics?.metrics,
        ready: async () => !nc.isClosed() && redis.status === "ready" && (await redis.ping()) === "PONG",
      });
      const server = await listen(gw.app.fetch, cfg);
      const port = (server.address() as AddressInfo).port;
      // One line a person (or a test harness) can read the address from.
      log.info(
        { url: `http://${cfg.host}:${port}`, keys: cfg.keys.names.length, anonymous: cfg.anonymous },
        "gateway listening",
      );
      return {
        async stop(graceMs: number) {
          // Refuse new work, end open streams (clients reconnect elsewhere with Last-Event-ID), then close.
          gw.drain(graceMs);
          await closeServer(server, graceMs, () => gw.openAnswers());
          await gw.close();
          await metrics?.server.close();
          await nc.drain();
          await redis.quit();
          await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
        },
      };
    },
  });
}

/**
 * NATS and Redis, both at once (each waits on its server): a failure of either ends the start, and
 * the process exits with it (runUntilSignalled), which drops the other connection too.
 */
async function connect(cfg: GatewayConfig): Promise<{ nc: NatsConnection; redis: Redis }> {
  const [nc, redis] = await Promise.all([
    connectNats({ url: cfg.natsUrl, ...cfg.nats, name: `gateway-${process.pid}`, waitOnFirstConnect: true }),
    connectRedis(cfg.redisUrl, {
      name: `gateway-${process.pid}`,
      ...(cfg.redisTlsCa === undefined ? {} : { tlsCaFile: cfg.redisTlsCa }),
      ...(cfg.redisSentinel === undefined ? {} : { sentinel: cfg.redisSentinel }),
    }),
  ]);
  return { nc, redis };
}

/** The session store (read for ownership and status) and the limits replicas share, both on Redis. */
function redisStores(cfg: GatewayConfig, redis: Redis) {
  const store = createRedisSessionStore(redis, {
    keyPrefix: cfg.prefix,
    activeTtlMs: cfg.activeTtlMs,
    finishedTtlMs: cfg.finishedTtlMs,
    idempotencyTtlMs: cfg.activeTtlMs,
  });
  const limits = createRedisLimits(redis, {
    keyPrefix: cfg.prefix,
    rateLimit: cfg.rateLimit,
    rateWindowMs: cfg.rateWindowMs,
    maxConcurrentSessions: cfg.maxConcurrentSessions,
    sessionTtlMs: cfg.sessionSlotTtlMs,
    requestKeyTtlMs: cfg.idempotencyTtlMs,
    maxStreamsPerKey: cfg.maxStreamsPerKey,
    streamOpenRate: cfg.streamOpenRate,
  });
  return { store, limits };
}

/** The HTTP server on the API's host and port, with its timeouts and connection cap, once it listens. */
export function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  cfg: Pick<GatewayConfig, "host" | "port" | "http">,
): Promise<Server> {
  const h = cfg.http;
  return new Promise<Server>((resolve, reject) => {
    const s = serve(
      {
        fetch,
        hostname: cfg.host,
        port: cfg.port,
        createServer,
        // the timeouts are checked this often (Node's default, 30 s, would let a slow client hold a
        // connection up to that much past its timeout)
        serverOptions: {
          headersTimeout: h.headersTimeoutMs,
          requestTimeout: h.requestTimeoutMs,
          connectionsCheckingInterval: Math.min(2000, h.headersTimeoutMs),
        },
      },
      () => resolve(s as Server),
    ) as Server;
    s.keepAliveTimeout = h.keepAliveTimeoutMs;
    s.maxConnections = h.maxConnections;
    s.once("error", reject);
  });
}

/** Closes the server within `graceMs`: idle connections at once, every other one a moment later. */
function closeServer(server: Server, graceMs: number, answering: () => number): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      clearInterval(poll);
      resolve();
    };
    const t = setTimeout(() => {
      server.closeAllConnections();
      done();
    }, graceMs);
    t.unref();
    server.close(done);
    server.closeIdleConnections();
    // The `/api` streams end at once; the `/v1` answers go on until they end or drain's deadline
    // ends them. Once none is left (checked from a moment on), a connection still open only
    // carries retries answered 503: cut it.
    const since = Date.now();
    const poll = setInterval(() => {
      if (Date.now() - since >= 1000 && answering() === 0) server.closeAllConnections();
    }, 100);
    poll.unref();
  });
}
