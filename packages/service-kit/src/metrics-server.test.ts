import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { createHealth, type Health } from "./health.js";
import { createLogger } from "./logger.js";
import { createMetrics } from "./metrics.js";
import { startMetricsServer, startProcessMetrics, type MetricsServer } from "./metrics-server.js";

const log = createLogger({ service: "test", level: "silent" });
const servers: MetricsServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function start(metrics = createMetrics({ defaultMetrics: false }), health?: Health): Promise<MetricsServer> {
  const s = await startMetricsServer(metrics, { host: "127.0.0.1", port: 0, log, ...(health ? { health } : {}) });
  servers.push(s);
  return s;
}

describe("the metrics endpoint", () => {
  it("serves GET /metrics in the exposition format on the port it bound", async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.counter({ name: "agentmesh_served_total", help: "x", labels: ["role"] }).inc({ role: "planner" }, 4);
    const s = await start(m);
    expect(s.port).toBeGreaterThan(0);
    expect(s.url).toBe(`http://127.0.0.1:${s.port}/metrics`);
    const res = await fetch(s.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toContain('agentmesh_served_total{role="planner"} 4');
  });

  it("routes nothing else: other paths are 404, other methods 405", async () => {
    const s = await start();
    const root = s.url.replace(/\/metrics$/, "");
    expect((await fetch(`${root}/`)).status).toBe(404);
    expect((await fetch(`${root}/api/v1/query`)).status).toBe(404);
    const post = await fetch(s.url, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${s.url}?x=1`)).status).toBe(200);
  });

  it("answers 500 with one line, not a stack, when a sampled metric fails", async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.sampledGauge({
      name: "agentmesh_broken",
      help: "x",
      labels: [],
      sample: () => Promise.reject(new Error("nats down at /secret/path")),
    });
    const res = await fetch((await start(m)).url);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("metrics collection failed\n");
  });

  it("refuses a port in use with a typed configuration error", async () => {
    const s = await start();
    const err = await startMetricsServer(createMetrics({ defaultMetrics: false }), {
      host: "127.0.0.1",
      port: s.port,
      log,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentmeshError);
    expect((err as AgentmeshError).code).toBe("invalid_config");
    expect((err as AgentmeshError).message).toMatch(/EADDRINUSE/);
  });

  it("closes promptly even while a scraper holds a keep-alive connection", async () => {
    const s = await start();
    const agent = new (await import("node:http")).Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      request(s.url, { agent }, (res) => {
        res.resume();
        res.on("end", resolve);
      })
        .on("error", reject)
        .end();
    });
    servers.splice(servers.indexOf(s), 1);
    const t0 = Date.now();
    await s.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    await expect(fetch(s.url)).rejects.toThrow();
    agent.destroy();
  });

  it("starts nothing when metrics are off, and a served registry with Node metrics when on", async () => {
    expect(await startProcessMetrics(null, log)).toBeNull();
    const pm = await startProcessMetrics({ host: "127.0.0.1", port: 0 }, log);
    expect(pm).not.toBeNull();
    if (!pm) return;
    servers.push(pm.server);
    expect(await (await fetch(pm.server.url)).text()).toContain("process_resident_memory_bytes");
  });
});

/** A probe's status and body. */
async function probe(s: MetricsServer, path: string, init?: RequestInit): Promise<{ status: number; body: string }> {
  const res = await fetch(`${s.origin}${path}`, init);
  return { status: res.status, body: await res.text() };
}

describe("the probes on the same port (/readyz, /healthz)", () => {
  it("/readyz is 503 while starting, while a part is not ready and once draining; 200 only in between", async () => {
    const health = createHealth();
    let consuming = false;
    health.require(() => (consuming ? null : "planner: consume loop not running"));
    const s = await start(undefined, health);
    // starting and the loop not running: the part that is down is the reason
    expect(await probe(s, "/readyz")).toEqual({
      status: 503,
      body: '{"status":"fail","reason":"planner: consume loop not running"}\n',
    });
    consuming = true;
    // every part is up but start-up has not finished (more parts may come)
    expect(await probe(s, "/readyz")).toEqual({ status: 503, body: '{"status":"fail","reason":"starting"}\n' });
    health.started();
    expect(await probe(s, "/readyz")).toEqual({ status: 200, body: '{"status":"ready"}\n' });
    consuming = false;
    expect((await probe(s, "/readyz")).status).toBe(503);
    consuming = true;
    expect((await probe(s, "/readyz")).status).toBe(200);
    health.drain();
    expect(await probe(s, "/readyz")).toEqual({
      status: 503,
      body: '{"status":"fail","reason":"draining (shutting down)"}\n',
    });
    // draining is for good: a late started() does not bring it back
    health.started();
    expect((await probe(s, "/readyz")).status).toBe(503);
    // draining is not dead: the process is finishing its work
    expect(await probe(s, "/healthz")).toEqual({ status: 200, body: '{"status":"alive"}\n' });
  });

  it("a required link is needed for ready while it reconnects, and for alive once it is closed for good", () => {
    const health = createHealth();
    let nats: "up" | "reconnecting" | "closed" = "up";
    const redisDown = false;
    health.requireLinks(
      {
        whyNotReady: () => (nats === "up" ? null : `nats: ${nats}`),
        whyDead: () => (nats === "closed" ? "nats: closed" : null),
      },
      { whyNotReady: () => (redisDown ? "redis: down" : null), whyDead: () => null },
    );
    health.started();
    expect([health.readiness(), health.liveness()]).toEqual([{ ok: true }, { ok: true }]);
    nats = "reconnecting";
    expect([health.readiness(), health.liveness()]).toEqual([
      { ok: false, reason: "nats: reconnecting" },
      { ok: true },
    ]);
    nats = "closed";
    expect([health.readiness(), health.liveness()]).toEqual([
      { ok: false, reason: "nats: closed" },
      { ok: false, reason: "nats: closed" },
    ]);
  });

  it("/healthz is 200 from the start (even while not ready) and 503 only when a liveness check fails", async () => {
    const health = createHealth();
    let closed = false;
    health.require(() => "nats: disconnected, reconnecting");
    health.requireAlive(() => (closed ? "nats: connection closed for good" : null));
    const s = await start(undefined, health);
    expect(await probe(s, "/healthz")).toEqual({ status: 200, body: '{"status":"alive"}\n' });
    expect((await probe(s, "/readyz")).status).toBe(503);
    closed = true;
    expect(await probe(s, "/healthz")).toEqual({
      status: 503,
      body: '{"status":"fail","reason":"nats: connection closed for good"}\n',
    });
  });

  it("a check that throws is a 503 naming the failure, one line of JSON", async () => {
    const health = createHealth();
    health.started();
    health.require(() => {
      throw new Error("boom");
    });
    const r = await probe(await start(undefined, health), "/readyz");
    expect(r.status).toBe(503);
    expect(r.body.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(r.body)).toEqual({ status: "fail", reason: "health check failed: boom" });
  });

  it("answers HEAD without a body, refuses other methods, 404s unknown paths, and still serves /metrics", async () => {
    const health = createHealth();
    health.started();
    const m = createMetrics({ defaultMetrics: false });
    m.counter({ name: "agentmesh_served_total", help: "x", labels: [] }).inc({}, 2);
    const s = await start(m, health);
    expect(await probe(s, "/readyz", { method: "HEAD" })).toEqual({ status: 200, body: "" });
    expect((await probe(s, "/readyz", { method: "POST", body: "x" })).status).toBe(405);
    expect((await probe(s, "/healthz?verbose=1")).status).toBe(200);
    const unknown = await probe(s, "/ready");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toBe("not found: /metrics, /readyz and /healthz are served here\n");
    expect((await probe(s, "/")).status).toBe(404);
    expect((await probe(s, "/readyz/")).status).toBe(404);
    expect((await probe(s, "/metrics")).body).toContain("agentmesh_served_total 2");
  });

  it("without a Health the port serves /metrics only: no probe that would always say ready", async () => {
    const s = await start();
    expect((await probe(s, "/readyz")).status).toBe(404);
    expect((await probe(s, "/healthz")).status).toBe(404);
  });
});
