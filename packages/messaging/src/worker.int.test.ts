import {
  AgentmeshError,
  HEADERS,
  InboxInput,
  naming as makeNaming,
  SCHEMA_VERSION,
  taskId,
  type Naming,
  type TaskOutcome,
} from "@agentmesh/contracts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Match, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { markCancelled } from "./cancelled.js";
import { listDeadLetters } from "./dead-letters.js";
import { buildHeaders } from "./trace.js";
import { createPublisher } from "./publisher.js";
import {
  connectTest,
  dropStreams,
  freshNaming,
  makeTask,
  recordingLog,
  sessionId,
  sleep,
  streamMessages,
  waitFor,
} from "./test-support.js";
import type { TaskHandler, Worker } from "./types.js";
import { startWorker } from "./worker.js";

const ok = (output: unknown = { answer: 4 }): TaskOutcome => ({
  ok: true,
  output,
  provenance: {
    role: "planner",
    op: "plan",
    model: "scripted",
    tier: "fast",
    prompt_version: "1",
    attempt: 0,
    usage: { prompt_tokens: 1, completion_tokens: 1, cost_usd: 0, model_calls: 1 },
    latency_ms: 1,
  },
});

let nc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  nc = await connectTest("messaging-worker-test");
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nc.drain();
});

async function setup(over: Parameters<typeof freshNaming>[1] = {}) {
  const { naming, opts } = await freshNaming(nc, over);
  cleanups.push(() => dropStreams(nc, naming));
  return { naming, opts, publisher: createPublisher(nc, naming, recordingLog()) };
}

async function worker(
  naming: Naming,
  handler: TaskHandler,
  over: { maxDeliver?: number; ackWaitMs?: number; crash?: (p: string) => void; concurrency?: number } = {},
) {
  const log = recordingLog();
  const w: Worker = await startWorker(nc, {
    naming,
    role: "planner",
    concurrency: over.concurrency ?? 2,
    ackWaitMs: over.ackWaitMs ?? 1000,
    maxDeliver: over.maxDeliver ?? 3,
    handler,
    log,
    ...(over.crash ? { crash: over.crash } : {}),
  });
  cleanups.push(() => w.stop(500));
  return { w, log };
}

async function results(naming: Naming) {
  const msgs = await streamMessages(nc, naming.streams.inbox);
  return msgs.map((m) => ({ msg: m, input: InboxInput.parse(m.json()) }));
}

describe("startWorker", () => {
  it("works a task and publishes its result to the session inbox with msg id and headers, crash points in order", async () => {
    const { naming, publisher } = await setup();
    const points: string[] = [];
    const { w } = await worker(
      naming,
      async (task, ctx) => {
        points.push(`handler:${ctx.deliveryCount}`);
        expect(task.input).toEqual({ question: "what is 2+2?" });
        return ok();
      },
      { crash: (p) => points.push(p) },
    );
    const sid = sessionId();
    const task = makeTask(sid);
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await publisher.publishTask(task, { traceparent });

    await waitFor(() => w.stats.processed === 1, 10_000, "task processed");
    const inbox = await results(naming);
    expect(inbox).toHaveLength(1);
    const { msg, input } = inbox[0]!;
    expect(msg.subject).toBe(naming.inbox(sid, "planner"));
    expect(msg.header.get("Nats-Msg-Id")).toBe(`result:${task.task_id}`);
    expect(msg.header.get(HEADERS.sessionId)).toBe(sid);
    expect(msg.header.get(HEADERS.taskId)).toBe(task.task_id);
    expect(msg.header.get(HEADERS.schemaVersion)).toBe(String(SCHEMA_VERSION));
    const tp = msg.header.get(HEADERS.traceparent, Match.IgnoreCase);
    expect(tp).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    expect(tp).not.toBe(traceparent);
    expect(input).toMatchObject({
      kind: "result",
      input_id: `result:${task.task_id}`,
      task_id: task.task_id,
      role: "planner",
      op: "plan",
      outcome: { ok: true, output: { answer: 4 } },
    });
    expect(points).toEqual(["after-fetch", "handler:1", "after-result-publish", "before-ack"]);
    // acked: the work-queue stream no longer holds the task
    await waitFor(
      async () => (await jetstreamManager(nc).then((j) => j.streams.info(naming.streams.tasks))).state.messages === 0,
      5000,
      "task removed",
    );
    expect(w.stats).toMatchObject({ processed: 1, failed: 0, redelivered: 0, dropped: 0, in_flight: 0 });
    expect(w.alive()).toBe(true);
  });

  it("naks a retryable failure with a delay, then succeeds on redelivery", async () => {
    const { naming, publisher } = await setup();
    const seen: Array<{ n: number; at: number }> = [];
    const { w } = await worker(naming, async (_t, ctx) => {
      seen.push({ n: ctx.deliveryCount, at: Date.now() });
      if (ctx.deliveryCount === 1)
        return {
          ok: false,
          error: { code: "model_rate_limited", message: "slow down", retryable: true, component: "planner" },
          provenance: null,
        };
      return ok();
    });
    await publisher.publishTask(makeTask(sessionId()));
    await waitFor(() => w.stats.processed === 1, 10_000, "second delivery processed");
    expect(seen.map((s) => s.n)).toEqual([1, 2]);
    // nak(delay) with delay >= 500 ms for the first retry; a plain nak would redeliver at once
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(450);
    expect(w.stats.redelivered).toBe(1);
    const inbox = await results(naming);
    expect(inbox).toHaveLength(1);
    expect(inbox[0]!.input).toMatchObject({ kind: "result", outcome: { ok: true } });
  });

  it("reports a typed failure on the last delivery instead of nak'ing again", async () => {
    const { naming, publisher } = await setup({ taskMaxDeliver: 2 });
    const last: boolean[] = [];
    const { w } = await worker(
      naming,
      async (_t, ctx) => {
        last.push(ctx.lastDelivery);
        if (ctx.deliveryCount === 1) throw new Error("socket hang up");
        return {
          ok: false,
          error: { code: "model_error", message: "upstream 500", retryable: true, component: "planner" },
          provenance: null,
        };
      },
      { maxDeliver: 2 },
    );
    const task = makeTask(sessionId());
    await publisher.publishTask(task);
    await waitFor(() => w.stats.failed === 1, 10_000, "failure reported");
    expect(last).toEqual([false, true]);
    const inbox = await results(naming);
    expect(inbox).toHaveLength(1);
    expect(inbox[0]!.input).toMatchObject({
      kind: "result",
      input_id: `result:${task.task_id}`,
      outcome: { ok: false, error: { code: "model_error", retryable: true, component: "planner" }, provenance: null },
    });
  });

  it("treats a thrown error as a retryable internal failure", async () => {
    const { naming, publisher } = await setup({ taskMaxDeliver: 1 });
    const { w } = await worker(
      naming,
      async () => {
        throw new Error("bug: undefined is not a function");
      },
      { maxDeliver: 1 },
    );
    await publisher.publishTask(makeTask(sessionId()));
    await waitFor(() => w.stats.failed === 1, 10_000, "failure reported");
    const [r] = await results(naming);
    expect(r!.input).toMatchObject({
      outcome: { ok: false, error: { code: "internal", retryable: true, message: "bug: undefined is not a function" } },
    });
  });

  it("settles malformed, oversized, wrong-version, wrong-role and misrouted tasks once (reported or dead-lettered) and keeps working", async () => {
    const { naming, publisher } = await setup();
    const handled: string[] = [];
    const { w, log } = await worker(naming, async (task) => {
      handled.push(task.task_id);
      return ok();
    });
    const js = jetstream(nc);
    const sid = sessionId();
    const subject = naming.task("planner", "plan");
    await js.publish(subject, "not json {", { msgID: "bad-1" });
    await js.publish(subject, JSON.stringify({ ...makeTask(sid), input: "x".repeat(300 * 1024) }), { msgID: "bad-2" });
    await js.publish(subject, JSON.stringify({ ...makeTask(sid, { task_id: taskId(sid, 3, 0, 0) }), v: 2 }), {
      msgID: "bad-3",
    });
    await js.publish(subject, JSON.stringify(makeTask(sid, { role: "critic" })), { msgID: "bad-4" });
    await js.publish(subject, JSON.stringify({ v: 1, task_id: "nope" }), { msgID: "bad-5" });
    await js.publish(naming.task("planner", "other_op"), JSON.stringify(makeTask(sid)), { msgID: "bad-6" });

    await waitFor(() => w.stats.dropped === 6, 10_000, "six drops");
    // longer than ack_wait (1 s): an unsettled message would have come back by now
    await sleep(1600);
    expect(w.stats.dropped).toBe(6);
    expect(w.stats.redelivered).toBe(0);
    expect(handled).toEqual([]);
    const reasons = log.lines.filter((l) => l.level === "warn").map((l) => String((l.o as { reason?: string }).reason));
    expect(reasons.join("\n")).toMatch(/not JSON/);
    expect(reasons.join("\n")).toMatch(/oversized task/);
    expect(reasons.join("\n")).toMatch(/unsupported schema version 2/);
    expect(reasons.join("\n")).toMatch(/role "critic"/);
    expect(reasons.join("\n")).toMatch(/invalid task/);
    expect(reasons.join("\n")).toMatch(/planner\.plan arrived on .*\.task\.planner\.other_op/);
    const ci = await (
      await jetstreamManager(nc)
    ).consumers.info(naming.streams.tasks, naming.consumers.role("planner"));
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.num_redelivered).toBe(0);
    expect(w.alive()).toBe(true);
    // the two whose ids are readable were reported to their session; the rest are dead letters
    const reported = (await results(naming)).map((r) => r.input);
    expect(reported.map((i) => (i.kind === "result" && !i.outcome.ok ? i.outcome.error.code : i.kind)).sort()).toEqual([
      "invalid_message",
      "payload_too_large",
    ]);
    const dead = await listDeadLetters(nc, naming);
    expect(dead.map((x) => x.originalSubject).sort()).toEqual(
      [subject, subject, subject, naming.task("planner", "other_op")].sort(),
    );
    expect(dead.every((x) => x.kind === "task" && x.reason !== null)).toBe(true);

    const good = makeTask(sid, { task_id: taskId(sid, 2, 0, 0) });
    await publisher.publishTask(good);
    await waitFor(() => w.stats.processed === 1, 10_000, "a good task after the bad ones");
    expect(handled).toEqual([good.task_id]);
  });

  it("reports a malformed task whose ids can be recovered as a non-retryable failure at once; dead-letters one whose ids cannot", async () => {
    const { naming } = await setup();
    const handled: string[] = [];
    const { w } = await worker(naming, async (task) => {
      handled.push(task.task_id);
      return ok();
    });
    const js = jetstream(nc);
    const subject = naming.task("planner", "plan");
    const sid = sessionId();
    // ids only in our headers, body not a task at all
    const byHeader = taskId(sid, 4, 0, 0);
    const h = buildHeaders({ sessionId: sid, taskId: byHeader });
    await js.publish(subject, "[1,2,3]", { msgID: "hdr", headers: h });
    // ids in the body, input nested 100,000 levels deep (under the byte limit)
    const byBody = taskId(sid, 5, 0, 0);
    const bomb = JSON.stringify({ ...makeTask(sid, { task_id: byBody }), input: null }).replace(
      '"input":null',
      `"input":${"[".repeat(100_000)}${"]".repeat(100_000)}`,
    );
    await js.publish(subject, bomb, { msgID: "bomb" });
    // a task id that belongs to another session: not trusted, dead-lettered
    await js.publish(subject, JSON.stringify({ ...makeTask(sid, { task_id: taskId(sessionId(), 1, 0, 0) }), v: 7 }), {
      msgID: "mismatch",
    });

    await waitFor(
      async () => (await results(naming)).length === 2 && (await listDeadLetters(nc, naming)).length === 1,
      10_000,
      "two reports and one dead letter",
    );
    const byTask = new Map((await results(naming)).map((r) => [r.input.kind === "result" ? r.input.task_id : "", r]));
    for (const [id, code, text] of [
      [byHeader, "invalid_message", /not JSON|version/],
      [byBody, "invalid_message", /deeper than 64 levels/],
    ] as const) {
      const r = byTask.get(id);
      expect(r?.msg.subject).toBe(naming.inbox(sid, "planner"));
      expect(r?.input).toMatchObject({
        kind: "result",
        session_id: sid,
        role: "planner",
        op: "plan",
        outcome: { ok: false, error: { code, retryable: false } },
      });
      const input = r?.input;
      expect(input?.kind === "result" && !input.outcome.ok && input.outcome.error.message).toMatch(text);
    }
    const [dead] = await listDeadLetters(nc, naming);
    expect(dead).toMatchObject({
      kind: "task",
      originalSubject: subject,
      reason: expect.stringMatching(/unsupported schema version 7/),
    });
    await sleep(1200);
    expect(handled).toEqual([]);
    expect(w.stats.redelivered).toBe(0);
    expect(await streamMessages(nc, naming.streams.tasks)).toHaveLength(0);
  });

  it("keeps the lease with working(): a 2.5 s task under a 1 s ack_wait is delivered exactly once", async () => {
    const { naming, publisher } = await setup({ taskAckWaitMs: 1000 });
    const deliveries: number[] = [];
    const { w } = await worker(
      naming,
      async (_t, ctx) => {
        deliveries.push(ctx.deliveryCount);
        await sleep(2500);
        return ok();
        // a free slot keeps a pull open, so an expired lease would be redelivered right here
      },
      { ackWaitMs: 1000, concurrency: 2 },
    );
    await publisher.publishTask(makeTask(sessionId()));
    await waitFor(() => w.stats.processed === 1, 15_000, "slow task done");
    await sleep(1500);
    expect(deliveries).toEqual([1]);
    expect(w.stats.redelivered).toBe(0);
    expect(await results(naming)).toHaveLength(1);
  });

  it("fetches only for free slots: concurrency 2, ack_wait 1 s, 2.5 s handler, 3 tasks -> each delivered exactly once", async () => {
    const { naming, publisher } = await setup({ taskAckWaitMs: 1000 });
    const deliveries = new Map<string, number[]>();
    const { w } = await worker(
      naming,
      async (t, ctx) => {
        deliveries.set(t.task_id, [...(deliveries.get(t.task_id) ?? []), ctx.deliveryCount]);
        await sleep(2500);
        return ok();
      },
      { ackWaitMs: 1000, concurrency: 2 },
    );
    const sid = sessionId();
    const ids = [0, 1, 2].map((i) => taskId(sid, 1, i, 0));
    for (const id of ids) await publisher.publishTask(makeTask(sid, { task_id: id }));
    await waitFor(() => w.stats.processed === 3, 20_000, "three slow tasks done");
    // past ack_wait again: a task that sat unleased in a buffer would come back now
    await sleep(1500);
    expect(Object.fromEntries(deliveries)).toEqual(Object.fromEntries(ids.map((id) => [id, [1]])));
    expect(w.stats.redelivered).toBe(0);
    expect(await results(naming)).toHaveLength(3);
    const ci = await (
      await jetstreamManager(nc)
    ).consumers.info(naming.streams.tasks, naming.consumers.role("planner"));
    expect(ci.num_redelivered).toBe(0);
  });

  it("aborts the handler's signal on a cancel notice for its session and reports cancelled", async () => {
    const { naming, publisher } = await setup();
    let started = false;
    let reason: unknown;
    const { w } = await worker(
      naming,
      (_t, ctx) =>
        new Promise<TaskOutcome>((_resolve, reject) => {
          started = true;
          ctx.signal.addEventListener("abort", () => {
            reason = ctx.signal.reason;
            reject(new Error("aborted by signal"));
          });
        }),
    );
    const sid = sessionId();
    await publisher.publishTask(makeTask(sid));
    await waitFor(() => started, 10_000, "handler started");
    await publisher.publishCancel({ v: SCHEMA_VERSION, session_id: sid, reason: "user pressed Ctrl-C" });
    await waitFor(() => w.stats.failed === 1, 10_000, "cancel reported");
    expect(reason).toBeInstanceOf(AgentmeshError);
    expect((reason as AgentmeshError).code).toBe("cancelled");
    const [r] = await results(naming);
    expect(r!.input).toMatchObject({ outcome: { ok: false, error: { code: "cancelled", retryable: false } } });
  });

  it("never starts a queued task of a cancelled session: the model is not called, the outcome is cancelled", async () => {
    const { naming, publisher } = await setup();
    const cancelled = sessionId();
    const live = sessionId();
    // queued while no agent runs, so no one hears the broadcast
    for (let i = 0; i < 3; i++)
      await publisher.publishTask(makeTask(cancelled, { task_id: taskId(cancelled, 1, i, 0) }));
    await publisher.publishCancel({ v: SCHEMA_VERSION, session_id: cancelled, reason: "user asked" });
    await publisher.publishTask(makeTask(live, { task_id: taskId(live, 1, 0, 0) }));
    const modelCalls: string[] = [];
    const { w } = await worker(naming, async (task) => {
      modelCalls.push(task.task_id);
      return ok();
    });
    await waitFor(async () => (await results(naming)).length === 4, 10_000, "four outcomes");
    expect(modelCalls).toEqual([taskId(live, 1, 0, 0)]);
    const outcomes = (await results(naming)).map((r) => r.input).filter((i) => i.session_id === cancelled);
    expect(outcomes).toHaveLength(3);
    for (const i of outcomes)
      expect(i).toMatchObject({
        kind: "result",
        outcome: { ok: false, error: { code: "cancelled", retryable: false } },
      });
    expect(w.stats).toMatchObject({ processed: 1, failed: 3, redelivered: 0 });
    expect(await streamMessages(nc, naming.streams.tasks)).toHaveLength(0);
  });

  it("never starts a task of a session marked while it runs, with no broadcast heard (the watched bucket)", async () => {
    const { naming, publisher } = await setup();
    const calls: string[] = [];
    const { w } = await worker(naming, async (task) => (calls.push(task.task_id), ok()));
    const sid = sessionId();
    // marked by another coordinator; this worker hears no broadcast
    await markCancelled(nc, naming, sid, "budget");
    await publisher.publishTask(makeTask(sid));
    await waitFor(() => w.stats.failed === 1, 10_000, "reported cancelled");
    expect(calls).toEqual([]);
    const [r] = await results(naming);
    expect(r!.input).toMatchObject({ session_id: sid, outcome: { ok: false, error: { code: "cancelled" } } });
  });

  it("never works a task whose deadline has passed; reports deadline_exceeded", async () => {
    const { naming, publisher } = await setup();
    let called = 0;
    const { w } = await worker(naming, async () => {
      called++;
      return ok();
    });
    const task = makeTask(sessionId(), { deadline_at: Date.now() - 1000 });
    await publisher.publishTask(task);
    await waitFor(() => w.stats.failed === 1, 10_000, "deadline failure reported");
    expect(called).toBe(0);
    const [r] = await results(naming);
    expect(r!.input).toMatchObject({
      task_id: task.task_id,
      outcome: { ok: false, error: { code: "deadline_exceeded" } },
    });
    await sleep(1200);
    expect(called).toBe(0);
  });

  it("holds a backed-off task until its not_before: it goes back to the stream and is worked once, after that time", async () => {
    const { naming, publisher } = await setup();
    const worked: number[] = [];
    const { w } = await worker(naming, async () => {
      worked.push(Date.now());
      return ok();
    });
    const notBefore = Date.now() + 1500;
    await publisher.publishTask(makeTask(sessionId(), { not_before: notBefore, deadline_at: notBefore + 30_000 }));
    await waitFor(() => w.stats.processed === 1, 10_000, "the task worked after its time");
    expect(worked).toHaveLength(1);
    expect(worked[0]).toBeGreaterThanOrEqual(notBefore);
    // one early delivery went back with the rest of the wait as its delay, not a busy loop
    expect(w.stats.redelivered).toBe(1);
    expect(await results(naming)).toHaveLength(1);
  });

  it("works a not-yet-due task on its last delivery rather than lose it", async () => {
    const { naming, publisher } = await setup();
    let called = 0;
    const { w } = await worker(
      naming,
      async () => {
        called++;
        return ok();
      },
      { maxDeliver: 1 },
    );
    await publisher.publishTask(makeTask(sessionId(), { not_before: Date.now() + 60_000 }));
    await waitFor(() => w.stats.processed === 1, 10_000, "worked at once");
    expect(called).toBe(1);
  });

  it("aborts a handler at the task deadline", async () => {
    const { naming, publisher } = await setup();
    const { w } = await worker(
      naming,
      (_t, ctx) =>
        new Promise<TaskOutcome>((_r, reject) =>
          ctx.signal.addEventListener("abort", () => reject(new Error("aborted"))),
        ),
    );
    await publisher.publishTask(makeTask(sessionId(), { deadline_at: Date.now() + 400 }));
    await waitFor(() => w.stats.failed === 1, 10_000, "deadline abort reported");
    const [r] = await results(naming);
    expect(r!.input).toMatchObject({ outcome: { ok: false, error: { code: "deadline_exceeded", retryable: false } } });
  });

  it("stop() naks in-flight work so another worker gets it at once, not after ack_wait", async () => {
    const { naming, publisher } = await setup({ taskAckWaitMs: 30_000 });
    let started = false;
    const first = await startWorker(nc, {
      naming,
      role: "planner",
      concurrency: 1,
      ackWaitMs: 30_000,
      maxDeliver: 3,
      log: recordingLog(),
      // ignores its signal: stop() must not wait for it beyond the grace period
      handler: () => {
        started = true;
        return new Promise<TaskOutcome>(() => undefined);
      },
    });
    await publisher.publishTask(makeTask(sessionId()));
    await waitFor(() => started, 10_000, "first worker busy");
    expect(first.stats.in_flight).toBe(1);
    const t0 = Date.now();
    await first.stop(300);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(first.alive()).toBe(false);

    const seen: number[] = [];
    const { w: second } = await worker(
      naming,
      async (_t, ctx) => {
        seen.push(ctx.deliveryCount);
        return ok();
      },
      { ackWaitMs: 30_000 },
    );
    await waitFor(() => second.stats.processed === 1, 8000, "redelivered to the second worker well before ack_wait");
    expect(seen).toEqual([2]);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it("refuses to start on a prefix that was never provisioned, with a retryable `unavailable`", async () => {
    const naming = makeNaming(uniquePrefix("unprov"));
    const err = await startWorker(nc, {
      naming,
      role: "planner",
      concurrency: 1,
      ackWaitMs: 1000,
      maxDeliver: 3,
      log: recordingLog(),
      handler: async () => ok(),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentmeshError);
    expect(err).toMatchObject({ code: "unavailable", retryable: true });
    expect((err as Error).message).toContain(`role_planner on stream ${naming.streams.tasks}`);
  });

  it("bounds in-flight work to the concurrency", async () => {
    const { naming, publisher } = await setup({ taskAckWaitMs: 5000 });
    let running = 0;
    let peak = 0;
    const { w } = await worker(
      naming,
      async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(150);
        running--;
        return ok();
      },
      { concurrency: 2, ackWaitMs: 5000 },
    );
    const sid = sessionId();
    for (let i = 0; i < 8; i++) await publisher.publishTask(makeTask(sid, { task_id: taskId(sid, 1, i, 0) }));
    await waitFor(() => w.stats.processed === 8, 15_000, "all eight processed");
    expect(peak).toBe(2);
  });
});
