import { describe, expect, test } from "vitest";
import { SCHEMA_VERSION, type InboxInput, type OutboxEntry, type TaskEnvelope } from "@agentmesh/contracts";
import { createLocalSessionStore } from "@agentmesh/session-store/testing";
import { createLogger, type Tracing } from "@agentmesh/service-kit";
import { createRecordingTracing } from "@agentmesh/service-kit/testing";
import { DEFAULTS, out, resultFor } from "@agentmesh/workflows/testing";
import { createCoordinatorCore, type CoordinatorPublisher, type PublishContext } from "./core.js";
import { mintSessionTrace } from "./trace.js";

const log = createLogger({ service: "test", level: "silent" });
const SID = "tracetest0000001";
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const CLIENT_TP = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;

const counter = (start: number) => {
  let n = start;
  return (bytes: number) => Buffer.alloc(bytes, n++);
};

describe("a session's trace context", () => {
  test("continues a client's valid traceparent: same trace, the client's span is the root's parent", () => {
    const t = mintSessionTrace(CLIENT_TP, counter(1));
    expect(t).toEqual({
      trace_id: CLIENT_TRACE,
      root_span_id: "0101010101010101",
      parent_span_id: CLIENT_SPAN,
      sampled: true,
    });
    expect(mintSessionTrace(`00-${CLIENT_TRACE}-${CLIENT_SPAN}-00`).sampled).toBe(false);
  });

  test.each([
    undefined,
    "not-a-traceparent",
    `00-${"0".repeat(32)}-${CLIENT_SPAN}-01`,
    `00-${CLIENT_TRACE}-${"0".repeat(16)}-01`,
  ])("starts a new sampled trace without a usable client traceparent (%s)", (tp) => {
    const t = mintSessionTrace(tp);
    expect(t.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(t.trace_id).not.toBe(CLIENT_TRACE);
    expect(t.root_span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(t.parent_span_id).toBeNull();
    expect(t.sampled).toBe(true);
  });
});

/** A publisher recording each outbox publish with its trace headers; can fail the next one (a crash after the CAS). */
function recorder() {
  const inbox: Array<{ input: InboxInput; ctx: PublishContext | undefined }> = [];
  const outboxes: Array<{ entries: readonly OutboxEntry[]; ctx: PublishContext | undefined }> = [];
  let failNext = false;
  const publisher: CoordinatorPublisher = {
    async publishInbox(input, ctx) {
      inbox.push({ input, ctx });
    },
    async publishOutbox(entries, ctx) {
      if (failNext) {
        failNext = false;
        throw new Error("broker unreachable");
      }
      outboxes.push({ entries, ctx });
    },
  };
  const tasks = () =>
    outboxes.flatMap((o) => o.entries.flatMap((e) => (e.kind === "task" ? [{ task: e.task, ctx: o.ctx }] : [])));
  return {
    publisher,
    inbox,
    outboxes,
    tasks,
    failNextPublish: () => {
      failNext = true;
    },
  };
}

function answer(task: TaskEnvelope): InboxInput {
  const outputs: Record<string, unknown> = {
    "planner.plan": out.plan([], ["Compute it"]),
    "critic.review_plan": out.approve(),
    "expert.answer": out.answer("4"),
    "critic.review_answer": out.approve(),
    "finalizer.finalize": out.finalize("4"),
  };
  return resultFor(
    { task_id: task.task_id, role: task.role, op: task.op, attempt: task.attempt },
    outputs[`${task.role}.${task.op}`],
    {},
    task.session_id,
  );
}

const T0 = 1_700_000_000_000;

function setup(tracing: Tracing | undefined) {
  const now = { t: T0 };
  const store = createLocalSessionStore({
    keyPrefix: "t",
    activeTtlMs: 3_600_000,
    finishedTtlMs: 3_600_000,
    idempotencyTtlMs: 3_600_000,
    timerLeaseMs: 10_000,
    now: () => now.t,
  });
  const rec = recorder();
  const mk = (t: Tracing | undefined) =>
    createCoordinatorCore({
      store,
      publisher: rec.publisher,
      log,
      defaults: DEFAULTS,
      now: () => now.t,
      ...(t ? { tracing: t } : {}),
    });
  return { store, rec, core: mk(tracing), mk, now };
}

/** Runs the session's tasks until none is left unanswered. */
async function drive(
  core: ReturnType<typeof createCoordinatorCore>,
  rec: ReturnType<typeof recorder>,
  now: { t: number },
  from = 0,
) {
  for (let i = from; i < 20 && rec.tasks().length > i; i++) {
    now.t += 1000;
    await core.handleInput(answer(rec.tasks()[i]!.task));
  }
}

describe("coordinator spans (recording tracer, local store twin)", () => {
  test("every transition is a child of the session's root; tasks go out under their transition; the root is written at the end", async () => {
    const tracing = createRecordingTracing("coordinator");
    const { core, rec, store, now } = setup(tracing);
    const reply = await core.submit(
      { v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID, idempotency_key: "k1" },
      { traceparent: CLIENT_TP },
    );
    expect(reply.ok).toBe(true);
    const trace = (await store.load(SID))!.state.meta.trace!;
    expect(trace).toMatchObject({ trace_id: CLIENT_TRACE, parent_span_id: CLIENT_SPAN, sampled: true });
    // the start message already carries the session's trace (its root span)
    expect(rec.inbox[0]?.ctx?.traceparent).toBe(`00-${CLIENT_TRACE}-${trace.root_span_id}-01`);

    await core.handleInput(rec.inbox[0]!.input);
    await drive(core, rec, now);
    const final = (await store.load(SID))!.state;
    expect(final.meta.status).toBe("completed");

    const spans = tracing.spans();
    const transitions = spans.filter((s) => s.name === "transition");
    expect(transitions.map((s) => s.attributes["agentmesh.version"])).toEqual(
      Array.from({ length: final.meta.version }, (_, i) => i + 1),
    );
    for (const s of transitions) {
      expect(s.traceId).toBe(CLIENT_TRACE);
      expect(s.parentSpanId).toBe(trace.root_span_id);
      expect(s.attributes).toMatchObject({ "agentmesh.session_id": SID, "agentmesh.workflow": "critic-chain" });
    }
    expect(transitions[0]?.attributes["agentmesh.input_kind"]).toBe("start");
    expect(transitions[1]?.attributes).toMatchObject({
      "agentmesh.input_kind": "result",
      "agentmesh.role": "planner",
      "agentmesh.op": "plan",
    });
    // each task's traceparent names the span of the transition that dispatched it
    const ids = new Set(transitions.map((s) => s.spanId));
    for (const { ctx } of rec.tasks()) {
      const [, traceId, spanId] = ctx!.traceparent!.split("-");
      expect(traceId).toBe(CLIENT_TRACE);
      expect(ids.has(spanId!)).toBe(true);
    }
    const root = spans.filter((s) => s.name === "session");
    expect(root).toHaveLength(1);
    expect(root[0]).toMatchObject({
      traceId: CLIENT_TRACE,
      spanId: trace.root_span_id,
      parentSpanId: CLIENT_SPAN,
      startMs: T0,
      failed: false,
    });
    expect(root[0]!.endMs).toBe(final.meta.updated_at);
    expect(root[0]!.attributes).toMatchObject({ "agentmesh.status": "completed", "agentmesh.session_id": SID });
  });

  test("a crash after the CAS: the next coordinator re-publishes under the stored traceparent and writes the lost span under its id", async () => {
    const first = createRecordingTracing("coordinator-a");
    const { core, rec, store, mk, now } = setup(first);
    await core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID, idempotency_key: "k1" });
    const start = rec.inbox[0]!.input;
    rec.failNextPublish();
    await expect(core.handleInput(start)).rejects.toThrow("broker unreachable");
    const pending = (await store.load(SID))!;
    expect(pending.outbox?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    // the dying coordinator never ended (so never exported) that transition's span
    expect(first.spans().filter((s) => s.name === "transition")).toHaveLength(0);

    const second = createRecordingTracing("coordinator-b");
    const other = mk(second);
    await other.handleInput(start); // the redelivery: already applied, outbox re-published
    expect(rec.outboxes[0]?.ctx?.traceparent).toBe(pending.outbox?.traceparent);
    const [, traceId, spanId] = pending.outbox!.traceparent!.split("-");
    const trace = pending.state.meta.trace!;
    expect(traceId).toBe(trace.trace_id);
    const replaced = second.spans().filter((s) => s.name === "transition");
    expect(replaced).toHaveLength(1);
    expect(replaced[0]).toMatchObject({
      traceId,
      spanId,
      parentSpanId: trace.root_span_id,
      attributes: { "agentmesh.republished": true, "agentmesh.version": 1 },
    });

    await drive(other, rec, now);
    expect((await store.load(SID))!.state.meta.status).toBe("completed");
    const all = second.spans();
    expect(new Set(all.map((s) => s.traceId))).toEqual(new Set([trace.trace_id]));
    expect(all.filter((s) => s.name === "session")).toHaveLength(1);
  });

  test("with tracing off no span exists, and messages still carry the session's trace (its root span)", async () => {
    const { core, rec, store, now } = setup(undefined);
    await core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID, idempotency_key: "k1" });
    await core.handleInput(rec.inbox[0]!.input);
    await drive(core, rec, now);
    const trace = (await store.load(SID))!.state.meta.trace!;
    const tp = `00-${trace.trace_id}-${trace.root_span_id}-01`;
    expect(rec.outboxes.length).toBeGreaterThan(3);
    for (const o of rec.outboxes) expect(o.ctx?.traceparent).toBe(tp);
  });
});
