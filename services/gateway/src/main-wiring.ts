import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
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
import { loadGatewayConfig } from "./config.js";
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
      // both at once (each waits on its server): a failure of either ends the start, and the process
      // exits with it (runUntilSignalled), which drops the other connection too
      const [nc, redis] = await Promise.all([
        connectNats({ url: cfg.natsUrl, ...cfg.nats, name: `gateway-${process.pid}`, waitOnFirstConnect: true }),
        connectRedis(cfg.redisUrl, {
          name: `gateway-${process.pid}`,
          ...(cfg.redisTlsCa === undefined ? {} : { tlsCaFile: cfg.redisTlsCa }),
          ...(cfg.redisSentinel === undefined ? {} : { sentinel: cfg.redisSentinel }),
        }),
      ]);
      health.requireLinks(linkHealth(nc), redisHealth(redis));
      const naming = makeNaming(cfg.prefix);
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
      });
      const tracing = await createTracing({ serviceName: "gateway", config: cfg.tracing });
      const gw = createGatewayApp({
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
        ready: async () => !nc.isClosed() && redis.status === "ready" && (await redis.ping()) === "PONG",
      });
      const server = await new Promise<Server>((resolve, reject) => {
        const s = serve({ fetch: gw.app.fetch, hostname: cfg.host, port: cfg.port, createServer }, () =>
          resolve(s as Server),
        );
        (s as Server).once("error", reject);
      });
      const port = (server.address() as AddressInfo).port;
      // One line a person (or a test harness) can read the address from.
      log.info(
        { url: `http://${cfg.host}:${port}`, keys: cfg.keys.names.length, anonymous: cfg.anonymous },
        "gateway listening",
      );
      return {
        async stop(graceMs: number) {
          // Refuse new work, end open streams (clients reconnect elsewhere with Last-Event-ID), then close.
          gw.drain();
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, graceMs);
            t.unref();
            server.close(() => {
              clearTimeout(t);
              resolve();
            });
            server.closeIdleConnections();
            // The streams end at once; a connection still open a moment later only carries retries answered 503.
            setTimeout(() => server.closeAllConnections(), 1000).unref();
          });
          await metrics?.server.close();
          await nc.drain();
          await redis.quit();
          await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last export failed"));
        },
      };
    },
  });
}
