import { describe, expect, it } from "vitest";
import { AgentmeshError, naming, type TaskEnvelope } from "@agentmesh/contracts";
import { createScriptedModel } from "@agentmesh/llm/testing";
import type { Worker } from "@agentmesh/messaging";
import { createLogger, createMetrics, METRIC_CATALOGUE } from "@agentmesh/service-kit";
import { z } from "zod";
import { roleMetrics } from "./metrics.js";
import { metricSample as sample } from "@agentmesh/service-kit/testing";

const log = createLogger({ service: "test", level: "silent" });
const n = naming("agentmesh");
const noLag = async () => ({ pending: 4, ackPending: 1 });

const idle = (inFlight: number): Worker => ({
  stats: { processed: 0, failed: 0, redelivered: 0, dropped: 0, in_flight: inFlight },
  alive: () => true,
  stop: async () => undefined,
});

describe("an agent role's metrics", () => {
  it("registers exactly the catalogue's agent metrics", () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const rm = roleMetrics(metrics, { role: "critic", naming: n, lag: noLag, log });
    rm.metered(createScriptedModel([]));
    rm.watch(idle(0));
    const agents = Object.values(METRIC_CATALOGUE)
      .filter((m) => m.by.includes("agents"))
      .map((m) => m.name);
    expect(metrics.names().sort()).toEqual([...agents].sort());
  });

  it("never takes an op off the wire as a label: ops outside the role's registry entry are `unknown`", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const rm = roleMetrics(metrics, { role: "critic", naming: n, lag: noLag, log });
    rm.onSettled({ op: "review_plan", settlement: "completed", deliveryCount: 1 });
    rm.onSettled({ op: "sess123.drop-table", settlement: "dropped", deliveryCount: 3 });
    rm.onSettled({ op: "", settlement: "dropped", deliveryCount: 1 });
    const text = await metrics.text();
    expect(sample(text, "agentmesh_tasks_total", { role: "critic", op: "review_plan", outcome: "completed" })).toBe(1);
    expect(sample(text, "agentmesh_tasks_total", { role: "critic", op: "unknown", outcome: "dropped" })).toBe(2);
    expect(sample(text, "agentmesh_redeliveries_total", { consumer: "role_critic" })).toBe(1);
    expect(text).not.toContain("drop-table");
  });

  it("times the handler, also when it throws", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const rm = roleMetrics(metrics, { role: "critic", naming: n, lag: noLag, log });
    const task = { op: "review_answer" } as TaskEnvelope;
    const ctx = { deliveryCount: 1, lastDelivery: false, signal: new AbortController().signal };
    const ok = rm.timed(async () => ({
      ok: false,
      error: new AgentmeshError("timeout", "slow").toWire(),
      provenance: null,
    }));
    const throws = rm.timed(async () => Promise.reject(new Error("bug")));
    await ok(task, ctx);
    await expect(throws(task, ctx)).rejects.toThrow("bug");
    expect(
      sample(await metrics.text(), "agentmesh_task_duration_seconds_count", { role: "critic", op: "review_answer" }),
    ).toBe(2);
  });

  it("counts each answered model call's tokens and cost under the reply's model; a failed call adds nothing", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const rm = roleMetrics(metrics, { role: "critic", naming: n, lag: noLag, log });
    const model = rm.metered(
      createScriptedModel(
        [
          {
            role: "critic",
            op: "review_plan",
            output: { ok: true },
            usage: { prompt_tokens: 100, completion_tokens: 7, cost_usd: 0.002 },
          },
          { role: "critic", op: "review_plan", error: { code: "model_error", message: "502" } },
        ],
        { model: "llama3.1" },
      ),
    );
    const req = {
      role: "critic",
      op: "review_plan",
      system: "s",
      prompt: "p",
      input: {},
      schema: z.object({ ok: z.boolean() }),
      schemaName: "x",
    };
    expect((await model.complete({ ...req, taskId: "t1" })).output).toEqual({ ok: true });
    await expect(model.complete({ ...req, taskId: "t2" })).rejects.toThrow("502");
    const text = await metrics.text();
    const labels = { role: "critic", op: "review_plan", model: "llama3.1" };
    expect(sample(text, "agentmesh_model_calls_total", labels)).toBe(1);
    expect(sample(text, "agentmesh_model_input_tokens_total", labels)).toBe(100);
    expect(sample(text, "agentmesh_model_output_tokens_total", labels)).toBe(7);
    expect(sample(text, "agentmesh_model_cost_usd_total", labels)).toBe(0.002);
  });

  it("samples in-flight tasks and the consumer's backlog at each scrape, until unwatched", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const rm = roleMetrics(metrics, { role: "critic", naming: n, lag: noLag, log });
    const unwatch = rm.watch(idle(2));
    const consumer = { stream: n.streams.tasks, consumer: "role_critic" };
    let text = await metrics.text();
    expect(sample(text, "agentmesh_tasks_in_flight", { role: "critic" })).toBe(2);
    expect(sample(text, "agentmesh_consumer_pending_messages", consumer)).toBe(4);
    expect(sample(text, "agentmesh_consumer_ack_pending_messages", consumer)).toBe(1);
    unwatch();
    text = await metrics.text();
    expect(sample(text, "agentmesh_tasks_in_flight", { role: "critic" })).toBeNull();
    expect(sample(text, "agentmesh_consumer_pending_messages", consumer)).toBeNull();
  });

  it("leaves the lag out of a scrape when the server cannot be asked, and the scrape still succeeds", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const rm = roleMetrics(metrics, {
      role: "critic",
      naming: n,
      lag: () => Promise.reject(new AgentmeshError("unavailable", "nats down")),
      log,
    });
    rm.watch(idle(0));
    const text = await metrics.text();
    expect(sample(text, "agentmesh_tasks_in_flight", { role: "critic" })).toBe(0);
    expect(
      sample(text, "agentmesh_consumer_pending_messages", { stream: n.streams.tasks, consumer: "role_critic" }),
    ).toBeNull();
  });
});
