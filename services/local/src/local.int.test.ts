import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { startLocal } from "./local.js";

// The local runner with metrics on: the coordinator and its roles report into one registry,
// served on one port, while a halo session runs through them on the offline engine.

const log = createLogger({ service: "test", level: "silent" });
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "local-metrics" });
});
afterAll(async () => {
  await nc.drain();
});

/** The value of the first sample `name{labels} value` whose labels include `labels`, or null. */
function sample(text: string, name: string, labels: Record<string, string>): number | null {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (\S+)$/i.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter(Boolean);
    if (want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return null;
}

describe("services/local with AGENTMESH_METRICS_PORT=0", () => {
  it("serves the coordinator's and every role's metrics from one registry on one port", async () => {
    const prefix = uniquePrefix("loc");
    const local = await startLocal(
      {
        NATS_URL: inject("natsUrl"),
        REDIS_URL: inject("redisUrl"),
        AGENTMESH_PREFIX: prefix,
        AGENTMESH_METRICS_PORT: "0",
        AGENTMESH_METRICS_HOST: "127.0.0.1",
        AGENTMESH_ROLES: "planner,chat",
      },
      log,
      ["planner", "chat"],
    );
    try {
      const url = local.metricsUrl ?? "";
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(
        await local.coordinator.core.submit({ v: 1, query: "Hello, how are you?", workflow: "halo" }),
      ).toMatchObject({ ok: true });
      const done = { workflow: "halo", status: "completed" };
      let text = "";
      for (const end = Date.now() + 20_000; sample(text, "agentmesh_transitions_total", done) !== 1;) {
        if (Date.now() > end)
          throw new Error(
            `the halo session did not complete: ${text
              .split("\n")
              .filter((l) => l.startsWith("agentmesh_t"))
              .join("\n")}`,
          );
        await new Promise((r) => setTimeout(r, 100));
        text = await (await fetch(url)).text();
      }
      expect(sample(text, "agentmesh_tasks_total", { role: "planner", op: "capabilities", outcome: "completed" })).toBe(
        1,
      );
      expect(sample(text, "agentmesh_tasks_total", { role: "chat", op: "chitchat", outcome: "completed" })).toBe(1);
      expect(sample(text, "agentmesh_submits_total", { result: "accepted" })).toBe(1);
      for (const consumer of ["role_planner", "role_chat"])
        expect(sample(text, "agentmesh_consumer_pending_messages", { consumer })).toBe(0);
      expect(sample(text, "agentmesh_consumer_pending_messages", { consumer: "coordinator" })).not.toBeNull();
      // one registry: each metric is described once, the default Node metrics too
      expect(text.match(/^# TYPE agentmesh_consumer_pending_messages /gm)).toHaveLength(1);
      expect(text.match(/^# TYPE process_cpu_seconds_total /gm)).toHaveLength(1);
    } finally {
      await local.stop(500);
      // this run's streams (and its KV bucket's) carry the prefix in upper case
      const jsm = await jetstreamManager(nc);
      for await (const s of jsm.streams.names())
        if (s.includes(prefix.toUpperCase())) await jsm.streams.delete(s).catch(() => false);
    }
    await expect(fetch(local.metricsUrl ?? "")).rejects.toThrow();
  });
});
