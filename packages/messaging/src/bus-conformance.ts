import { describe, expect, it } from "vitest";
import { SCHEMA_VERSION, taskId, type InboxInput, type TaskEnvelope, type TaskOutcome } from "@agentmesh/contracts";
import type { Bus } from "./bus.js";
import type { Log } from "./log.js";

/** A bus under test, provisioned with `maxDeliver` task deliveries, and how to dispose of it. */
export type BusFactory = (o: { maxDeliver: number }) => Promise<{ bus: Bus; close(): Promise<void> }>;

const silent: Log = { info() {}, warn() {}, error() {}, debug() {} };
const provenance = { role: "planner", op: "plan", model: "test", tier: "fast" as const, prompt_version: "t/1", attempt: 0, usage: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 }, latency_ms: 1 };
const ok = (output: unknown): TaskOutcome => ({ ok: true, output, provenance });

function task(sid: string, n: number, over: Partial<TaskEnvelope> = {}): TaskEnvelope {
  return { v: SCHEMA_VERSION, task_id: taskId(sid, n, 0, 0), session_id: sid, role: "planner", op: "plan", attempt: 0, deadline_at: null, input: { n }, ...over };
}

async function until(cond: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for the bus");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The bus contract, run against the NATS JetStream bus and its in-memory twin: delivery,
 * de-duplication, redelivery of retryable failures, the typed failure on the last delivery,
 * past-deadline tasks, and inbox retries.
 */
export function runBusConformance(name: string, factory: BusFactory): void {
  describe(`bus conformance: ${name}`, () => {
    async function withBus(maxDeliver: number, body: (bus: Bus, inbox: InboxInput[]) => Promise<void>): Promise<void> {
      const { bus, close } = await factory({ maxDeliver });
      const inbox: InboxInput[] = [];
      const consumer = await bus.startInboxConsumer({ concurrency: 4, ackWaitMs: 5000, log: silent, handler: async (i) => { inbox.push(i); return "ack"; } });
      try {
        await body(bus, inbox);
      } finally {
        await consumer.stop(1000);
        await close();
      }
    }

    it("delivers a task once to its role's worker, even when published twice, and reports the outcome to the inbox", () =>
      withBus(3, async (bus, inbox) => {
        const seen: string[] = [];
        const w = await bus.startWorker({ role: "planner", concurrency: 2, ackWaitMs: 5000, maxDeliver: 3, log: silent, handler: async (t) => { seen.push(t.task_id); return ok({ research_steps: [], expert_steps: ["x"] }); } });
        const t = task("busconf00000001", 1);
        await bus.publishTask(t);
        await bus.publishTask(t);
        await until(() => inbox.length >= 1);
        await new Promise((r) => setTimeout(r, 300));
        expect(seen).toEqual([t.task_id]);
        expect(inbox).toHaveLength(1);
        expect(inbox[0]).toMatchObject({ kind: "result", input_id: `result:${t.task_id}`, task_id: t.task_id, outcome: { ok: true } });
        expect(w.stats.processed).toBe(1);
        await w.stop(1000);
      }));

    it("redelivers a retryable failure, then reports the success once", () =>
      withBus(3, async (bus, inbox) => {
        let calls = 0;
        const w = await bus.startWorker({
          role: "planner", concurrency: 1, ackWaitMs: 5000, maxDeliver: 3, log: silent,
          handler: async () => (++calls === 1 ? { ok: false, error: { code: "model_error", message: "flaky", retryable: true, component: "planner" }, provenance: null } : ok({ n: calls })),
        });
        await bus.publishTask(task("busconf00000002", 1));
        await until(() => inbox.length >= 1);
        expect(calls).toBe(2);
        expect(inbox).toHaveLength(1);
        expect(inbox[0]?.kind === "result" && inbox[0].outcome.ok).toBe(true);
        expect(w.stats.redelivered).toBe(1);
        await w.stop(1000);
      }));

    it("reports a typed failure on the last delivery instead of redelivering forever", () =>
      withBus(2, async (bus, inbox) => {
        let calls = 0;
        const w = await bus.startWorker({
          role: "planner", concurrency: 1, ackWaitMs: 5000, maxDeliver: 2, log: silent,
          handler: async () => { calls++; return { ok: false, error: { code: "model_error", message: "down", retryable: true, component: "planner" }, provenance: null }; },
        });
        await bus.publishTask(task("busconf00000003", 1));
        await until(() => inbox.length >= 1);
        await new Promise((r) => setTimeout(r, 300));
        expect(calls).toBe(2);
        expect(inbox).toHaveLength(1);
        expect(inbox[0]).toMatchObject({ kind: "result", outcome: { ok: false, error: { code: "model_error" } } });
        await w.stop(1000);
      }));

    it("never works a task past its deadline: it reports deadline_exceeded", () =>
      withBus(3, async (bus, inbox) => {
        let calls = 0;
        const w = await bus.startWorker({ role: "planner", concurrency: 1, ackWaitMs: 5000, maxDeliver: 3, log: silent, handler: async () => { calls++; return ok({}); } });
        await bus.publishTask(task("busconf00000004", 1, { deadline_at: Date.now() - 1 }));
        await until(() => inbox.length >= 1);
        expect(calls).toBe(0);
        expect(inbox[0]).toMatchObject({ kind: "result", outcome: { ok: false, error: { code: "deadline_exceeded" } } });
        await w.stop(1000);
      }));

    it("turns a handler's malformed outcome into a typed internal failure", () =>
      withBus(3, async (bus, inbox) => {
        const w = await bus.startWorker({ role: "planner", concurrency: 1, ackWaitMs: 5000, maxDeliver: 3, log: silent, handler: async () => ({ ok: true, output: {}, provenance: null }) as unknown as TaskOutcome });
        await bus.publishTask(task("busconf00000006", 1));
        await until(() => inbox.length >= 1);
        expect(inbox[0]).toMatchObject({ kind: "result", outcome: { ok: false, error: { code: "internal" } } });
        await w.stop(1000);
      }));

    it("redelivers an inbox message its handler asks to retry", async () => {
      const { bus, close } = await factory({ maxDeliver: 3 });
      const handled: number[] = [];
      const consumer = await bus.startInboxConsumer({
        concurrency: 1, ackWaitMs: 5000, log: silent,
        handler: async (_i, ctx) => { handled.push(ctx.deliveryCount); return handled.length === 1 ? "retry" : "ack"; },
      });
      try {
        await bus.publishInbox({ v: SCHEMA_VERSION, kind: "cancel", session_id: "busconf00000005", input_id: "cancel:busconf", reason: "test" });
        await until(() => handled.length >= 2);
        await new Promise((r) => setTimeout(r, 300));
        expect(handled).toEqual([1, 2]);
      } finally {
        await consumer.stop(1000);
        await close();
      }
    });
  });
}
