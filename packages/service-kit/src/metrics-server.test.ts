import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { createLogger } from "./logger.js";
import { createMetrics } from "./metrics.js";
import { startMetricsServer, startProcessMetrics, type MetricsServer } from "./metrics-server.js";

const log = createLogger({ service: "test", level: "silent" });
const servers: MetricsServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function start(metrics = createMetrics({ defaultMetrics: false })): Promise<MetricsServer> {
  const s = await startMetricsServer(metrics, { host: "127.0.0.1", port: 0, log });
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
    m.sampledGauge({ name: "agentmesh_broken", help: "x", labels: [], sample: () => Promise.reject(new Error("nats down at /secret/path")) });
    const res = await fetch((await start(m)).url);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("metrics collection failed\n");
  });

  it("refuses a port in use with a typed configuration error", async () => {
    const s = await start();
    const err = await startMetricsServer(createMetrics({ defaultMetrics: false }), { host: "127.0.0.1", port: s.port, log }).catch((e: unknown) => e);
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
      }).on("error", reject).end();
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
