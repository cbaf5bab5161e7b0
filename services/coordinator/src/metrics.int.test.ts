import { randomBytes } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  SCHEMA_VERSION,
  inputIds,
  naming as makeNaming,
  taskId,
  type InboxInput,
  type Naming,
} from "@agentmesh/contracts";
import { connectNats, type Worker } from "@agentmesh/messaging";
import { connectRedis, createRedisSessionStore, type SessionStore } from "@agentmesh/session-store";
import { createLogger, createMetrics } from "@agentmesh/service-kit";
import { DEFAULTS } from "@agentmesh/workflows/testing";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { loadCoordinatorConfig } from "./config.js";
import { createCoordinatorCore, type CoordinatorPublisher } from "./core.js";
import { startCoordinatorFromConfig } from "./main-wiring.js";
import { coordinatorMetrics } from "./metrics.js";
import { metricSample as sample } from "@agentmesh/service-kit/testing";

// A coordinator with metrics on, over real NATS and Redis: its /metrics endpoint shows the
// transitions it commits, the inputs it drops, its inbox backlog; and two coordinators racing on
// one session through the Redis store's compare-and-set count the race lost.

const log = createLogger({ service: "test", level: "silent" });
let nc: NatsConnection;
let redis: Redis;
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "coordinator-metrics" });
  redis = await connectRedis(inject("redisUrl"), { name: "coordinator-metrics" });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nc.drain();
  await redis.quit();
});

/** Deletes the prefix's streams and Redis keys after the test. */
function cleanUp(naming: Naming): void {
  cleanups.push(async () => {
    const jsm = await jetstreamManager(nc);
    for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
      await jsm.streams.delete(s).catch(() => false);
    const keys = await redis.keys(`${naming.prefix}:*`);
    if (keys.length) await redis.del(...keys);
  });
}

const until = async (cond: () => Promise<boolean>, what: string) => {
  for (const end = Date.now() + 15_000; !(await cond());) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("a coordinator with AGENTMESH_METRICS_PORT=0", () => {
  it("serves /metrics: a committed transition, a forged input dropped, submits and the inbox backlog", async () => {
    const naming = makeNaming(uniquePrefix("cmet"));
    cleanUp(naming);
    const cfg = loadCoordinatorConfig({
      NATS_URL: inject("natsUrl"),
      REDIS_URL: inject("redisUrl"),
      AGENTMESH_PREFIX: naming.prefix,
      AGENTMESH_METRICS_PORT: "0",
      AGENTMESH_METRICS_HOST: "127.0.0.1",
      AGENTMESH_INBOX_ACK_WAIT_MS: "5000",
    });
    const running = await startCoordinatorFromConfig(cfg, { nc, redis, log });
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await running.stop(500);
    });
    const url = running.metricsUrl ?? "";
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const scrape = async () => {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      return res.text();
    };

    const sid = `cmet${randomBytes(6).toString("hex")}`;
    const reply = await running.core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: sid });
    expect(reply.ok).toBe(true);
    const running1 = { workflow: "critic-chain", status: "running" };
    await until(
      async () => sample(await scrape(), "agentmesh_transitions_total", running1) === 1,
      "the start's transition",
    );

    // a result for the planner's task published under the critic's sender: forged, dropped, counted
    const tid = taskId(sid, 1, 0, 0);
    const forged: InboxInput = {
      v: SCHEMA_VERSION,
      kind: "result",
      session_id: sid,
      input_id: inputIds.result(tid),
      task_id: tid,
      role: "planner",
      op: "plan",
      outcome: {
        ok: false,
        error: { code: "internal", message: "forged", retryable: false, component: "planner" },
        provenance: null,
      },
    };
    await jetstream(nc).publish(naming.inbox(sid, "critic"), JSON.stringify(forged));
    await until(
      async () => sample(await scrape(), "agentmesh_inputs_dropped_total", { reason: "forged" }) === 1,
      "the forged input counted",
    );

    const text = await scrape();
    expect(sample(text, "agentmesh_transitions_total", running1)).toBe(1);
    expect(sample(text, "agentmesh_submits_total", { result: "accepted" })).toBe(1);
    expect(sample(text, "agentmesh_step_duration_seconds_count", { kind: "start", result: "ack" })).toBe(1);
    expect(sample(text, "agentmesh_sessions_in_flight", {})).toBe(0);
    expect(sample(text, "agentmesh_cas_conflicts_total", { workflow: "critic-chain" })).toBeNull();
    const inbox = { stream: naming.streams.inbox, consumer: "coordinator" };
    expect(sample(text, "agentmesh_consumer_pending_messages", inbox)).toBe(0);
    expect(text).toContain("process_cpu_seconds_total");
    expect(text).not.toContain(sid);
    // the forged input was in flight a moment ago; its lease ends with its term
    await until(
      async () => sample(await scrape(), "agentmesh_consumer_ack_pending_messages", inbox) === 0,
      "no inbox message in flight",
    );

    stopped = true;
    await running.stop(500);
    await expect(fetch(url)).rejects.toThrow();
  });
});

describe("two coordinators racing on one session through the Redis store", () => {
  it("the one whose compare-and-set loses counts a CAS conflict; each input is committed once", async () => {
    const naming = makeNaming(uniquePrefix("cas"));
    cleanUp(naming);
    const metrics = createMetrics({ defaultMetrics: false });
    const opts = { keyPrefix: naming.prefix, activeTtlMs: 60_000, finishedTtlMs: 60_000, idempotencyTtlMs: 60_000 };
    const inbox: InboxInput[] = [];
    const publisher: CoordinatorPublisher = {
      publishInbox: async (i) => void inbox.push(i),
      publishOutbox: async () => undefined,
    };
    const idle: Worker = {
      stats: { processed: 0, failed: 0, redelivered: 0, dropped: 0, in_flight: 0, forged: 0 },
      alive: () => true,
      stop: async () => undefined,
    };
    const noLag = async () => ({ pending: 0, ackPending: 0 });

    /** One coordinator over its own Redis store; `paused` holds it after its first load and applied-check, until released. */
    function coordinator(paused?: { loaded: () => void; release: Promise<void> }) {
      const base = createRedisSessionStore(redis, opts);
      let first = true;
      const store: SessionStore = paused
        ? {
            ...base,
            loadForInput: async (sid, id) => {
              const r = await base.loadForInput(sid, id);
              if (first) {
                first = false;
                paused.loaded();
                await paused.release;
              }
              return r;
            },
          }
        : base;
      const m = coordinatorMetrics(metrics, { naming, lag: noLag, log });
      const core = createCoordinatorCore({ store: m.store(store), publisher, log, defaults: DEFAULTS });
      m.watch(core.stats, idle);
      return { core, step: m.handler((input) => core.handleInput(input)) };
    }
    let loaded!: () => void;
    const hasLoaded = new Promise<void>((r) => (loaded = r));
    let release!: () => void;
    const b = coordinator({ loaded, release: new Promise<void>((r) => (release = r)) });
    const a = coordinator();

    const sid = `cas${randomBytes(6).toString("hex")}`;
    expect((await a.core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: sid })).ok).toBe(true);
    const start = inbox.at(-1);
    if (!start) throw new Error("no start input");
    const cancel: InboxInput = {
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: sid,
      input_id: inputIds.cancel("race"),
      reason: "changed my mind",
    };
    const ctx = { deliveryCount: 1, signal: new AbortController().signal };
    // B takes the cancel: loads version 0, finds it not applied and waits; A steps the start and
    // commits version 1; B then commits on version 0, loses, re-loads and commits version 2
    const racing = b.step(cancel, ctx);
    await hasLoaded;
    expect(await a.step(start, { ...ctx, deliveryCount: 2 })).toBe("ack");
    release();
    expect(await racing).toBe("ack");

    expect([a.core.stats.conflicts, b.core.stats.conflicts]).toEqual([0, 1]);
    const text = await metrics.text();
    expect(sample(text, "agentmesh_cas_conflicts_total", { workflow: "critic-chain" })).toBe(1);
    expect(sample(text, "agentmesh_transitions_total", { workflow: "critic-chain", status: "running" })).toBe(1);
    expect(sample(text, "agentmesh_transitions_total", { workflow: "critic-chain", status: "cancelled" })).toBe(1);
    expect(sample(text, "agentmesh_redeliveries_total", { consumer: "coordinator" })).toBe(1);
    expect(sample(text, "agentmesh_step_duration_seconds_count", { kind: "start", result: "ack" })).toBe(1);
    expect(sample(text, "agentmesh_step_duration_seconds_count", { kind: "cancel", result: "ack" })).toBe(1);
    expect(sample(text, "agentmesh_submits_total", { result: "accepted" })).toBe(1);
    const lines = await createRedisSessionStore(redis, opts).transitionLog(sid);
    expect(lines.map((l) => [l.version, l.input_id])).toEqual([
      [1, start.input_id],
      [2, cancel.input_id],
    ]);
  });
});
