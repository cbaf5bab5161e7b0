import { describe, expect, test } from "vitest";
import {
  AgentmeshError,
  SCHEMA_VERSION,
  inputIds,
  taskId,
  type InboxInput,
  type OutboxEntry,
} from "@agentmesh/contracts";
import { createLocalSessionStore } from "@agentmesh/session-store/testing";
import type { SessionStore } from "@agentmesh/session-store";
import { createLogger } from "@agentmesh/service-kit";
import { DEFAULTS, out, resultFor } from "@agentmesh/workflows/testing";
import { createCoordinatorCore, lostVersion, type CoordinatorPublisher } from "./core.js";

const log = createLogger({ service: "test", level: "silent" });
const SID = "replicawait00001";

/** A store twin whose replica wait fails while `failing` is set, recording the order of waits and publishes. */
function setup() {
  const base = createLocalSessionStore({
    keyPrefix: "t",
    activeTtlMs: 3_600_000,
    finishedTtlMs: 3_600_000,
    idempotencyTtlMs: 3_600_000,
    now: () => 1_700_000_000_000,
  });
  const events: string[] = [];
  const ctl = { failing: false };
  const store: SessionStore = {
    ...base,
    async commit(req) {
      const r = await base.commit(req);
      if (r.ok) events.push(`commit v${req.state.meta.version}`);
      return r;
    },
    async awaitReplicas() {
      events.push(ctl.failing ? "wait failed" : "wait");
      if (ctl.failing)
        throw new AgentmeshError("unavailable", "only 0 of 1 Redis replicas confirmed", { retryable: true });
    },
  };
  const inbox: InboxInput[] = [];
  const published: OutboxEntry[] = [];
  const publisher: CoordinatorPublisher = {
    async publishInbox(i) {
      inbox.push(i);
    },
    async publishOutbox(entries) {
      events.push(`publish ${entries.length}`);
      published.push(...entries);
    },
  };
  const core = createCoordinatorCore({ store, publisher, log, defaults: DEFAULTS, now: () => 1_700_000_000_000 });
  const tasks = () =>
    published.filter((e): e is Extract<OutboxEntry, { kind: "task" }> => e.kind === "task").map((e) => e.task);
  return { base, core, ctl, events, inbox, tasks };
}

async function started(s: ReturnType<typeof setup>): Promise<InboxInput> {
  const reply = await s.core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID });
  expect(reply.ok).toBe(true);
  const start = s.inbox.at(-1);
  if (!start) throw new Error("no start message");
  // the submit's own wait, before the start went out; the tests below follow the steps after it
  expect(s.events.splice(0)).toEqual(["wait"]);
  return start;
}

describe("the replica wait before a new session's start", () => {
  test("a failed wait fails the submit and publishes no start; the retry waits again and publishes it once", async () => {
    const s = setup();
    const req = { v: SCHEMA_VERSION, query: "What is 2 + 2?", idempotency_key: "retry-me" } as const;
    s.ctl.failing = true;
    await expect(s.core.submit(req)).rejects.toThrow("replicas confirmed");
    expect(s.inbox).toEqual([]);
    expect(s.events).toEqual(["wait failed"]);
    s.ctl.failing = false;
    const reply = await s.core.submit(req);
    expect(reply).toMatchObject({ ok: true, created: false });
    expect(s.events).toEqual(["wait failed", "wait"]);
    expect(s.inbox.map((i) => i.kind)).toEqual(["start"]);
    expect(s.inbox[0]?.session_id).toBe(reply.ok ? reply.session_id : "");
  });
});

describe("the replica wait before every outbox publish", () => {
  test("a commit's outbox goes out only after the wait; a failed wait publishes nothing and the input is retried", async () => {
    const s = setup();
    const start = await started(s);
    s.ctl.failing = true;
    await expect(s.core.handleInput(start)).rejects.toThrow("replicas confirmed");
    expect(s.events).toEqual(["commit v1", "wait failed"]);
    expect(s.tasks()).toEqual([]);
    // the commit stays with its outbox; the redelivered input waits again, then publishes it once
    expect((await s.base.load(SID))?.outbox?.version).toBe(1);
    s.ctl.failing = false;
    expect(await s.core.handleInput(start)).toBe("ack");
    expect(s.events).toEqual(["commit v1", "wait failed", "wait", "publish 2"]);
    expect(s.tasks().map((t) => t.task_id)).toEqual([taskId(SID, 1, 0, 0, inputIds.start(SID))]);
    expect((await s.base.load(SID))?.outbox).toBeNull();
    expect(s.core.stats).toMatchObject({ applied: 1, republished: 1, duplicates: 1 });
  });

  test("a re-published stored outbox waits too, and a failed wait leaves it stored", async () => {
    const s = setup();
    const start = await started(s);
    s.ctl.failing = true;
    await expect(s.core.handleInput(start)).rejects.toThrow();
    // another input of the session finds the outbox stored: still no publish while the wait fails
    await expect(s.core.handleInput(start)).rejects.toThrow();
    expect(s.events.filter((e) => e.startsWith("publish"))).toEqual([]);
    expect((await s.base.load(SID))?.outbox?.version).toBe(1);
  });
});

describe("a result for a version the store lost", () => {
  const result = (taskId: string) =>
    resultFor({ task_id: taskId, role: "planner", op: "plan", attempt: 0 }, out.plan([], ["Compute it"]), {}, SID);

  test("lostVersion names a task version above the stored one, and nothing else", () => {
    expect(lostVersion(result(`${SID}.3.0.0`), 2)).toBe(3);
    expect(lostVersion(result(`${SID}.2.0.0`), 2)).toBeNull();
    expect(lostVersion(result(`${SID}.1.0.0`), 2)).toBeNull();
    const timer: InboxInput = {
      v: SCHEMA_VERSION,
      kind: "timer",
      session_id: SID,
      input_id: `timer:${SID}.5.1.0`,
      task_id: `${SID}.5.1.0`,
      reason: "task_deadline",
    };
    expect(lostVersion(timer, 4)).toBe(5);
    expect(lostVersion({ ...timer, task_id: null, reason: "session_deadline" }, 0)).toBeNull();
  });

  test("is dropped and counted, applies nothing, and the session goes on from the stored version", async () => {
    const s = setup();
    const start = await started(s);
    expect(await s.core.handleInput(start)).toBe("ack");
    const before = await s.base.load(SID);
    const planTask = s.tasks()[0];
    if (!planTask || !before) throw new Error("no plan task");
    // the store holds version 1, awaiting the plan; a result of a task dispatched at version 2 arrives
    expect(await s.core.handleInput(result(`${SID}.2.0.0`))).toBe("ack");
    expect(s.core.stats).toMatchObject({ lost_version: 1, dropped: 1, applied: 1 });
    const after = await s.base.load(SID);
    expect(after?.state).toEqual(before.state);
    expect((await s.base.transitionLog(SID)).map((l) => l.version)).toEqual([1]);
    // the stored version's awaited task still moves it on
    expect(await s.core.handleInput(result(planTask.task_id))).toBe("ack");
    expect((await s.base.load(SID))?.state.meta.version).toBe(2);
    expect(s.core.stats.lost_version).toBe(1);
  });
});
