import { describe, expect, test } from "vitest";
import { SCHEMA_VERSION, naming, type InboxInput } from "@agentmesh/contracts";
import type { Worker } from "@agentmesh/messaging";
import { createLogger, createMetrics, METRIC_CATALOGUE } from "@agentmesh/service-kit";
import type { CoordinatorStats } from "./core.js";
import { coordinatorMetrics } from "./metrics.js";
import { createLocalSessionStore } from "@agentmesh/session-store/testing";
import { metricSample as sample } from "@agentmesh/service-kit/testing";

const log = createLogger({ service: "test", level: "silent" });
const n = naming("agentmesh");
const noLag = async () => ({ pending: 3, ackPending: 2 });
const stats = (): CoordinatorStats => ({
  submitted: 0,
  rejected: 0,
  applied: 0,
  dropped: 0,
  forged: 0,
  duplicates: 0,
  conflicts: 0,
  republished: 0,
  lost_version: 0,
  timers_fired: 0,
});
const inbox = (s: Partial<Worker["stats"]> = {}): Worker => ({
  stats: { processed: 0, failed: 0, redelivered: 0, dropped: 0, in_flight: 0, forged: 0, ...s },
  alive: () => true,
  stop: async () => undefined,
});
const cancel: InboxInput = {
  v: SCHEMA_VERSION,
  kind: "cancel",
  session_id: "metricstest00001",
  input_id: "cancel:1",
  reason: "x",
};

describe("a coordinator's metrics", () => {
  test("registers exactly the catalogue's coordinator metrics", () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const cm = coordinatorMetrics(metrics, { naming: n, lag: noLag, log });
    cm.store(
      createLocalSessionStore({ keyPrefix: "t", activeTtlMs: 1000, finishedTtlMs: 1000, idempotencyTtlMs: 1000 }),
    );
    cm.watch(stats(), inbox());
    const coordinator = Object.values(METRIC_CATALOGUE)
      .filter((m) => m.by.includes("coordinator"))
      .map((m) => m.name);
    expect(metrics.names().sort()).toEqual([...coordinator].sort());
  });

  test("splits dropped inputs by reason from the core's and the inbox consumer's counters", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const s = stats();
    Object.assign(s, { dropped: 6, forged: 2, lost_version: 1, duplicates: 4, submitted: 7, rejected: 1 });
    coordinatorMetrics(metrics, { naming: n, lag: noLag, log }).watch(s, inbox({ dropped: 3, forged: 1 }));
    const text = await metrics.text();
    expect(sample(text, "agentmesh_inputs_dropped_total", { reason: "forged" })).toBe(3);
    expect(sample(text, "agentmesh_inputs_dropped_total", { reason: "stale" })).toBe(3);
    expect(sample(text, "agentmesh_inputs_dropped_total", { reason: "lost_version" })).toBe(1);
    expect(sample(text, "agentmesh_inputs_dropped_total", { reason: "duplicate" })).toBe(4);
    expect(sample(text, "agentmesh_inputs_dropped_total", { reason: "unreadable" })).toBe(2);
    expect(sample(text, "agentmesh_submits_total", { result: "accepted" })).toBe(7);
    expect(sample(text, "agentmesh_submits_total", { result: "rejected" })).toBe(1);
    expect(
      sample(text, "agentmesh_consumer_pending_messages", { stream: n.streams.inbox, consumer: "coordinator" }),
    ).toBe(3);
    expect(
      sample(text, "agentmesh_consumer_ack_pending_messages", { stream: n.streams.inbox, consumer: "coordinator" }),
    ).toBe(2);
  });

  test("counts the sessions being stepped while a step runs, and times every step by its result", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const cm = coordinatorMetrics(metrics, { naming: n, lag: noLag, log });
    let during: number | null = null;
    const step = cm.handler(async () => {
      during = sample(await metrics.text(), "agentmesh_sessions_in_flight", {});
      return "retry";
    });
    const ctx = { deliveryCount: 1, signal: new AbortController().signal };
    expect(await step(cancel, ctx)).toBe("retry");
    await expect(
      cm.handler(() => Promise.reject(new Error("redis gone")))(cancel, { ...ctx, deliveryCount: 4 }),
    ).rejects.toThrow("redis gone");
    const text = await metrics.text();
    expect(during).toBe(1);
    expect(sample(text, "agentmesh_sessions_in_flight", {})).toBe(0);
    expect(sample(text, "agentmesh_step_duration_seconds_count", { kind: "cancel", result: "retry" })).toBe(1);
    expect(sample(text, "agentmesh_step_duration_seconds_count", { kind: "cancel", result: "error" })).toBe(1);
    expect(sample(text, "agentmesh_redeliveries_total", { consumer: "coordinator" })).toBe(1);
  });
});
