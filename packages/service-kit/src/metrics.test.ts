import { describe, expect, it } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { METRICS_VARS, metricsSettings, parseEnv } from "./env.js";
import { createMetrics, MAX_SERIES_PER_METRIC, type MetricLabel } from "./metrics.js";
import { metricSample as sample } from "./testing.js";

describe("the metrics registry", () => {
  it("renders counters, gauges and histograms with their labels, and the default Node metrics", async () => {
    const m = createMetrics();
    const tasks = m.counter({ name: "agentmesh_test_tasks_total", help: "tasks", labels: ["role", "outcome"] });
    tasks.inc({ role: "critic", outcome: "completed" });
    tasks.inc({ role: "critic", outcome: "completed" }, 2);
    const inflight = m.gauge({ name: "agentmesh_test_in_flight", help: "in flight", labels: ["role"] });
    inflight.inc({ role: "critic" });
    inflight.inc({ role: "critic" });
    inflight.dec({ role: "critic" });
    m.histogram({ name: "agentmesh_test_seconds", help: "latency", labels: ["op"], buckets: [0.1, 1] }).observe(
      { op: "plan" },
      0.5,
    );
    const text = await m.text();
    expect(sample(text, "agentmesh_test_tasks_total", { role: "critic", outcome: "completed" })).toBe(3);
    expect(sample(text, "agentmesh_test_in_flight", { role: "critic" })).toBe(1);
    expect(sample(text, "agentmesh_test_seconds_bucket", { op: "plan", le: "0.1" })).toBe(0);
    expect(sample(text, "agentmesh_test_seconds_bucket", { op: "plan", le: "1" })).toBe(1);
    expect(sample(text, "agentmesh_test_seconds_count", { op: "plan" })).toBe(1);
    expect(text).toContain("# TYPE agentmesh_test_tasks_total counter");
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(text).toContain("nodejs_eventloop_lag_seconds");
    expect(m.contentType).toMatch(/^text\/plain/);
    expect(m.names().sort()).toEqual([
      "agentmesh_test_in_flight",
      "agentmesh_test_seconds",
      "agentmesh_test_tasks_total",
    ]);
  });

  it("returns the same metric for the same name, kind and labels (one registry shared by components)", async () => {
    const m = createMetrics({ defaultMetrics: false });
    const a = m.counter({ name: "agentmesh_shared_total", help: "x", labels: ["consumer"] });
    const b = m.counter({ name: "agentmesh_shared_total", help: "x", labels: ["consumer"] });
    a.inc({ consumer: "coordinator" });
    b.inc({ consumer: "coordinator" });
    expect(sample(await m.text(), "agentmesh_shared_total", { consumer: "coordinator" })).toBe(2);
    expect(() => m.gauge({ name: "agentmesh_shared_total", help: "x", labels: ["consumer"] })).toThrow(AgentmeshError);
    expect(() => m.counter({ name: "agentmesh_shared_total", help: "x", labels: ["role"] })).toThrow(
      /registered twice/,
    );
  });

  it("refuses names without the agentmesh_ prefix, counters without _total, and unbounded labels", () => {
    const m = createMetrics({ defaultMetrics: false });
    expect(() => m.counter({ name: "tasks_total", help: "x", labels: [] })).toThrow(/name must match/);
    expect(() => m.counter({ name: "agentmesh_tasks", help: "x", labels: [] })).toThrow(/ends in _total/);
    expect(() => m.gauge({ name: "agentmesh_lag_total", help: "x", labels: [] })).toThrow(/only counters/);
    expect(() => m.counter({ name: "agentmesh_x_total", help: "x", labels: ["session_id" as MetricLabel] })).toThrow(
      /session_id not in METRIC_LABELS/,
    );
    expect(() => m.counter({ name: "agentmesh_y_total", help: "x", labels: ["role", "role"] })).toThrow(/named twice/);
    expect(() => m.counter({ name: "agentmesh_z_total", help: " ", labels: [] })).toThrow(/help is empty/);
  });

  it("folds label sets past the cap into one `other` series", async () => {
    const m = createMetrics({ defaultMetrics: false });
    const c = m.counter({ name: "agentmesh_many_total", help: "x", labels: ["model"] });
    for (let i = 0; i < MAX_SERIES_PER_METRIC + 20; i++) c.inc({ model: `m${i}` });
    c.inc({ model: "m0" });
    const text = await m.text();
    const series = text.split("\n").filter((l) => l.startsWith("agentmesh_many_total{"));
    expect(series).toHaveLength(MAX_SERIES_PER_METRIC + 1);
    expect(sample(text, "agentmesh_many_total", { model: "other" })).toBe(20);
    expect(sample(text, "agentmesh_many_total", { model: "m0" })).toBe(2);
  });

  it("reads counters and samples gauges at each scrape, from every source sharing the name", async () => {
    const m = createMetrics({ defaultMetrics: false });
    const stats = { forged: 0 };
    let pending = 7;
    m.readCounter({
      name: "agentmesh_read_total",
      help: "x",
      labels: ["reason"],
      read: () => [{ labels: { reason: "forged" }, value: stats.forged }],
    });
    m.sampledGauge({
      name: "agentmesh_pending",
      help: "x",
      labels: ["consumer"],
      sample: async (g) => g.set({ consumer: "role_critic" }, pending),
    });
    expect(sample(await m.text(), "agentmesh_read_total", { reason: "forged" })).toBe(0);
    expect(sample(await m.text(), "agentmesh_pending", { consumer: "role_critic" })).toBe(7);
    stats.forged = 3;
    pending = 2;
    const removeReader = m.readCounter({
      name: "agentmesh_read_total",
      help: "x",
      labels: ["reason"],
      read: () => [{ labels: { reason: "forged" }, value: 10 }],
    });
    const removeSampler = m.sampledGauge({
      name: "agentmesh_pending",
      help: "x",
      labels: ["consumer"],
      sample: (g) => g.set({ consumer: "coordinator" }, 5),
    });
    let text = await m.text();
    expect(sample(text, "agentmesh_read_total", { reason: "forged" })).toBe(13);
    expect(sample(text, "agentmesh_pending", { consumer: "role_critic" })).toBe(2);
    expect(sample(text, "agentmesh_pending", { consumer: "coordinator" })).toBe(5);
    removeReader();
    removeSampler();
    text = await m.text();
    expect(sample(text, "agentmesh_read_total", { reason: "forged" })).toBe(3);
    expect(sample(text, "agentmesh_pending", { consumer: "coordinator" })).toBeNull();
    expect(() => m.counter({ name: "agentmesh_read_total", help: "x", labels: ["reason"] })).toThrow(
      /registered twice/,
    );
    expect(() => m.gauge({ name: "agentmesh_pending", help: "x", labels: ["consumer"] })).toThrow(/registered twice/);
  });
});

describe("metrics settings from the environment", () => {
  it("is off without a port, and parses host and port (0 = any free port)", () => {
    expect(metricsSettings(parseEnv(METRICS_VARS, {}))).toBeNull();
    expect(metricsSettings(parseEnv(METRICS_VARS, { AGENTMESH_METRICS_PORT: "0" }))).toEqual({
      host: "127.0.0.1",
      port: 0,
    });
    expect(
      metricsSettings(parseEnv(METRICS_VARS, { AGENTMESH_METRICS_PORT: "9464", AGENTMESH_METRICS_HOST: "0.0.0.0" })),
    ).toEqual({ host: "0.0.0.0", port: 9464 });
  });

  it("lists a bad port as a configuration error", () => {
    expect(() => parseEnv(METRICS_VARS, { AGENTMESH_METRICS_PORT: "70000" })).toThrow(/AGENTMESH_METRICS_PORT="70000"/);
    expect(() => parseEnv(METRICS_VARS, { AGENTMESH_METRICS_PORT: "http" })).toThrow(AgentmeshError);
  });
});
