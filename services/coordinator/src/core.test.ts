import { describe, expect, test, vi } from "vitest";
import {
  LIMITS,
  SCHEMA_VERSION,
  inputIds,
  type InboxInput,
  type OutboxEntry,
  type TaskEnvelope,
} from "@agentmesh/contracts";
import { createLocalSessionStore, testCommit, testSessionState } from "@agentmesh/session-store/testing";
import type { SessionStore } from "@agentmesh/session-store";
import { createLogger } from "@agentmesh/service-kit";
import { DEFAULTS, out, resultFor } from "@agentmesh/workflows/testing";
import { CAS_BACKOFF, casBackoffMs, createCoordinatorCore, logInput, type CoordinatorPublisher } from "./core.js";

const log = createLogger({ service: "test", level: "silent" });
const SID = "coretest00000001";

/** Records what a coordinator publishes; can be told to fail the next outbox publish (a crash). */
function recorder() {
  const inbox: InboxInput[] = [];
  const published: OutboxEntry[] = [];
  let failNext = 0;
  const publisher: CoordinatorPublisher = {
    async publishInbox(i) {
      inbox.push(i);
    },
    async publishOutbox(entries) {
      if (failNext > 0) {
        failNext--;
        throw new Error("broker unreachable");
      }
      published.push(...entries);
    },
  };
  return {
    publisher,
    inbox,
    published,
    failNextPublish: () => {
      failNext++;
    },
    tasks: () =>
      published.filter((e): e is Extract<OutboxEntry, { kind: "task" }> => e.kind === "task").map((e) => e.task),
  };
}

function setup(now = { t: 1_700_000_000_000 }) {
  const store = createLocalSessionStore({
    keyPrefix: "t",
    activeTtlMs: 3_600_000,
    finishedTtlMs: 3_600_000,
    idempotencyTtlMs: 3_600_000,
    timerLeaseMs: 10_000,
    now: () => now.t,
  });
  const rec = recorder();
  const core = createCoordinatorCore({
    store,
    publisher: rec.publisher,
    log,
    defaults: { ...DEFAULTS, taskDeadlineMs: 1000 },
    now: () => now.t,
  });
  return { store, rec, core, now };
}

/** Answers a critic-chain task the way a happy agent would. */
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

async function submit(core: ReturnType<typeof setup>["core"], rec: ReturnType<typeof recorder>) {
  const reply = await core.submit({
    v: SCHEMA_VERSION,
    query: "What is 2 + 2?",
    session_id: SID,
    idempotency_key: "k1",
  });
  expect(reply.ok).toBe(true);
  const start = rec.inbox.at(-1);
  if (!start) throw new Error("no start message");
  return start;
}

describe("coordinator core (local session store twin)", () => {
  test("drives a session to completion, one transition per input", async () => {
    const { core, rec, store } = setup();
    expect(await core.handleInput(await submit(core, rec))).toBe("ack");
    for (let i = 0; i < 10 && rec.tasks().length > i; i++)
      expect(await core.handleInput(answer(rec.tasks()[i]!))).toBe("ack");
    const s = await store.load(SID);
    expect(s?.state.meta.status).toBe("completed");
    expect(s?.outbox).toBeNull();
    expect((await store.transitionLog(SID)).map((l) => l.version)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  test("a submit retried with the same idempotency key returns the same session and creates nothing new", async () => {
    const { core, rec, store } = setup();
    const a = await core.submit({
      v: SCHEMA_VERSION,
      query: "What is 2 + 2?",
      session_id: SID,
      idempotency_key: "same",
    });
    const b = await core.submit({
      v: SCHEMA_VERSION,
      query: "What is 2 + 2?",
      session_id: "othersession0001",
      idempotency_key: "same",
    });
    expect(a.ok && b.ok && a.session_id === b.session_id).toBe(true);
    expect(b.ok && b.created).toBe(false);
    expect(await store.listSessions(10)).toEqual([SID]);
    expect(rec.inbox.map((i) => i.input_id)).toEqual([inputIds.start(SID), inputIds.start(SID)]);
  });

  test("an option of another workflow is refused at submit, naming the option and its workflow; nothing is created", async () => {
    const { core, rec, store } = setup();
    const reply = await core.submit({
      v: SCHEMA_VERSION,
      query: "What is 2 + 2?",
      workflow: "halo",
      session_id: SID,
      options: { mode: "code" },
    });
    expect(reply).toMatchObject({
      ok: false,
      error: {
        code: "invalid_message",
        message: 'the option "mode" belongs to the supervisor workflow; this query runs halo',
      },
    });
    expect(await store.listSessions(10)).toEqual([]);
    expect(rec.inbox).toEqual([]);
    expect(
      await core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID, options: { retry_limit: 2 } }),
    ).toMatchObject({ ok: true, session_id: SID });
  });

  test("a publish that fails after the CAS is repaired by redelivery: stored outbox re-published, not re-stepped", async () => {
    const { core, rec, store } = setup();
    const start = await submit(core, rec);
    rec.failNextPublish();
    await expect(core.handleInput(start)).rejects.toThrow("broker unreachable");
    const pending = await store.load(SID);
    expect(pending?.state.meta.version).toBe(1);
    expect(pending?.outbox?.entries.some((e) => e.kind === "task")).toBe(true);
    expect(rec.tasks()).toHaveLength(0);
    // JetStream redelivers the unacked message.
    expect(await core.handleInput(start)).toBe("ack");
    expect(rec.tasks()).toHaveLength(1);
    expect((await store.load(SID))?.state.meta.version).toBe(1);
    expect((await store.load(SID))?.outbox).toBeNull();
    expect(core.stats.duplicates).toBe(1);
    expect(core.stats.republished).toBe(1);
  });

  test("two coordinators stepping the same session race through CAS: each input applies once", async () => {
    const shared = { t: 1_700_000_000_000 };
    const a = setup(shared);
    const bCore = createCoordinatorCore({
      store: a.store,
      publisher: a.rec.publisher,
      log,
      defaults: DEFAULTS,
      now: () => shared.t,
    });
    const start = await submit(a.core, a.rec);
    const results = await Promise.all([a.core.handleInput(start), bCore.handleInput(start)]);
    expect(results).toEqual(["ack", "ack"]);
    expect((await a.store.transitionLog(SID)).map((l) => l.input_id)).toEqual([inputIds.start(SID)]);
    expect(a.core.stats.applied + bCore.stats.applied).toBe(1);
  });

  test("late, duplicate and unknown-session inputs are dropped without touching state", async () => {
    const { core, rec, store } = setup();
    await core.handleInput(await submit(core, rec));
    const task = rec.tasks()[0]!;
    const before = await store.load(SID);
    const bogus = answer({ ...task, task_id: `${SID}.1.0.7` });
    expect(await core.handleInput(bogus)).toBe("ack");
    expect(
      await core.handleInput(answer({ ...task, session_id: "ghostsession0001", task_id: "ghostsession0001.1.0.0" })),
    ).toBe("ack");
    expect(await store.load(SID)).toEqual(before);
    expect(await store.listSessions(10)).toEqual([SID]);
    expect(core.stats.dropped).toBe(2);
  });

  test("a task deadline fires once as a timer input and re-dispatches a new attempt", async () => {
    const { core, rec, now } = setup();
    await core.handleInput(await submit(core, rec));
    const first = rec.tasks()[0]!;
    now.t += 999;
    expect(await core.fireDueTimers()).toBe(0);
    now.t += 1;
    expect(await core.fireDueTimers()).toBe(1);
    expect(await core.fireDueTimers()).toBe(0); // leased: not handed out twice
    const timer = rec.inbox.at(-1)!;
    expect(timer).toMatchObject({ kind: "timer", task_id: first.task_id, input_id: inputIds.timer(first.task_id) });
    await core.handleInput(timer);
    const retry = rec.tasks()[1]!;
    expect(retry.role).toBe("planner");
    expect(retry.attempt).toBe(first.attempt + 1);
    // The timed-out attempt's late result no longer applies.
    expect(await core.handleInput(answer(first))).toBe("ack");
    expect(core.stats.dropped).toBe(1);
  });

  test("result and deadline racing at deadline ± 5 ms, 200 times: exactly one of them applies", async () => {
    let resultWins = 0;
    for (let i = 0; i < 200; i++) {
      const { core, rec, store, now } = setup();
      await core.handleInput(await submit(core, rec));
      const task = rec.tasks()[0]!;
      const offset = (i % 11) - 5; // -5 … +5 ms around the deadline
      now.t += 1000 + offset;
      const fired = await core.fireDueTimers();
      const res = answer(task);
      const timer = rec.inbox.find((m) => m.kind === "timer");
      // Deliver in arrival order: the result arrives at deadline + offset, the timer at the deadline.
      const order = offset < 0 || !timer ? [res, timer] : [timer, res];
      for (const m of order) if (m) await core.handleInput(m);
      const log = await store.transitionLog(SID);
      const applied = log.map((l) => l.input_id);
      expect(fired).toBe(offset >= 0 ? 1 : 0);
      const resultApplied = applied.includes(inputIds.result(task.task_id));
      const timerApplied = applied.includes(inputIds.timer(task.task_id));
      expect(resultApplied !== timerApplied).toBe(true);
      if (resultApplied) resultWins++;
      expect(log.map((l) => l.version)).toEqual(log.map((_, n) => n + 1));
    }
    expect(resultWins).toBeGreaterThan(0);
    expect(resultWins).toBeLessThan(200);
  });

  test("an unreadable timer member is removed at its first firing, with one warning", async () => {
    const { store, rec, now } = setup();
    const s = testSessionState("sess-badtimer-1");
    await store.create(s);
    await store.commit(
      testCommit(s, "in:a", {
        timers: [
          { member: "garbage-member", dueAt: now.t },
          { member: "task:not-a-task-id", dueAt: now.t },
        ],
      }),
    );
    const warnLog = createLogger({ service: "test", level: "silent" });
    const warn = vi.spyOn(warnLog, "warn");
    const core = createCoordinatorCore({
      store,
      publisher: rec.publisher,
      log: warnLog,
      defaults: DEFAULTS,
      now: () => now.t,
    });
    expect(await core.fireDueTimers()).toBe(2);
    expect(warn).toHaveBeenCalledTimes(2);
    // Past the lease a leased member would come due again; a removed one never does.
    now.t += 60_000;
    expect(await core.fireDueTimers()).toBe(0);
    expect(await store.claimDueTimers(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    expect(warn).toHaveBeenCalledTimes(2);
    expect(rec.inbox).toEqual([]);
  });

  test("CAS conflicts back off exponentially with jitter, capped, then give up for redelivery", async () => {
    const { store, rec, core: first } = setup();
    const start = await submit(first, rec);
    // A store where every commit loses the race, as if another coordinator always got there first.
    const losing: SessionStore = {
      ...store,
      commit: async () => ({ ok: false, reason: "conflict", currentVersion: 7 }),
    };
    const sleeps: number[] = [];
    const core = createCoordinatorCore({
      store: losing,
      publisher: rec.publisher,
      log,
      defaults: DEFAULTS,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
    });
    expect(await core.handleInput(start)).toBe("retry");
    expect(core.stats.conflicts).toBe(25);
    expect(sleeps).toHaveLength(25);
    expect(sleeps.slice(0, 6)).toEqual([2, 5, 10, 20, 40, 80]);
    expect(Math.max(...sleeps)).toBe(CAS_BACKOFF.capMs / 2);
    // Full jitter: the wait spans [0, ceiling) as the random source does.
    expect(casBackoffMs(3, () => 0)).toBe(0);
    expect(casBackoffMs(3, () => 0.999)).toBe(39);
    expect(casBackoffMs(40, () => 0.999)).toBe(CAS_BACKOFF.capMs - 1);
  });

  test("a transition-log line keeps a short input whole and only a bounded summary of a long one", async () => {
    const { core, rec, store } = setup();
    const start = await submit(core, rec);
    await core.handleInput(start);
    const task = rec.tasks()[0]!;
    const big = resultFor(
      { task_id: task.task_id, role: task.role, op: task.op, attempt: task.attempt },
      { ...out.plan([], ["Compute it"]), notes: "x".repeat(200_000) },
      {},
      SID,
    );
    expect(await core.handleInput(big)).toBe("ack");
    const [first, second] = await store.transitionLog(SID);
    expect(first?.input).toEqual(start);
    expect(second?.input).toMatchObject({
      kind: "result",
      input_id: big.input_id,
      task_id: task.task_id,
      role: "planner",
      op: "plan",
      ok: true,
      truncated: true,
    });
    expect(JSON.stringify(second).length).toBeLessThan(LIMITS.maxLogInputChars);
    expect(logInput(big)).not.toHaveProperty("outcome");
  });

  test("a retry after the session and its idempotency key expired starts a new session under a new id", async () => {
    const now = { t: 1_700_000_000_000 };
    const store = createLocalSessionStore({
      keyPrefix: "t",
      activeTtlMs: 3_600_000,
      finishedTtlMs: 60_000,
      idempotencyTtlMs: 3_600_000,
      now: () => now.t,
    });
    const rec = recorder();
    let n = 0;
    const core = createCoordinatorCore({
      store,
      publisher: rec.publisher,
      log,
      defaults: DEFAULTS,
      now: () => now.t,
      newSessionId: () => `idemsession${String(++n).padStart(5, "0")}`,
    });
    const first = await core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", idempotency_key: "day-one" });
    if (!first.ok) throw new Error("submit failed");
    await core.handleInput(rec.inbox.at(-1)!);
    await core.handleInput({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: first.session_id,
      input_id: inputIds.cancel("c1"),
      reason: "done",
    });
    expect((await store.load(first.session_id))?.state.meta.status).toBe("cancelled");
    // Within the finished TTL the retry finds the finished session and re-runs nothing.
    now.t += 30_000;
    expect(await core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", idempotency_key: "day-one" })).toMatchObject(
      { ok: true, session_id: first.session_id, created: false },
    );
    // "Day 2": the session is gone, and so is its key (it followed the session's 60 s, not its own hour).
    now.t += 31_000;
    expect(await store.load(first.session_id)).toBeNull();
    const retry = await core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", idempotency_key: "day-one" });
    expect(retry).toMatchObject({ ok: true, created: true });
    expect(retry.ok && retry.session_id).not.toBe(first.session_id);
  });
});

describe("threads: a conversation of sessions", () => {
  const THREAD = "thread-core-0001";
  const q = (query: string, extra: Record<string, unknown> = {}) => ({
    v: SCHEMA_VERSION,
    query,
    thread_id: THREAD,
    owner: "alice",
    ...extra,
  });

  /** Runs the critic-chain session of the last start input to completion. */
  async function finish(core: ReturnType<typeof setup>["core"], rec: ReturnType<typeof recorder>): Promise<void> {
    const from = rec.tasks().length;
    await core.handleInput(rec.inbox.at(-1)!);
    for (let i = from; i < rec.tasks().length && i < from + 10; i++) await core.handleInput(answer(rec.tasks()[i]!));
  }

  test("a follow-up is a new session that receives the earlier turns; owner and thread are in its metadata", async () => {
    const { core, rec, store } = setup();
    let n = 0;
    const first = await core.submit(q("What is 2 + 2?", { session_id: `threadsess${++n}0000` }));
    expect(first).toMatchObject({ ok: true, created: true, thread_id: THREAD, replied: false });
    await finish(core, rec);
    const s1 = first.ok ? first.session_id : "";
    expect((await store.load(s1))?.state.meta).toMatchObject({
      status: "completed",
      owner: "alice",
      thread_id: THREAD,
    });
    const second = await core.submit(q("And times 3?", { session_id: `threadsess${++n}0000` }));
    expect(second).toMatchObject({ ok: true, created: true, thread_id: THREAD });
    const start = rec.inbox.at(-1);
    expect(start).toMatchObject({
      kind: "start",
      query: "And times 3?",
      messages: [
        { role: "user", content: "What is 2 + 2?" },
        { role: "assistant", content: "4" },
      ],
    });
    expect((await store.loadThread(THREAD))?.sessions).toEqual([s1, second.ok ? second.session_id : ""]);
  });

  test("clarify: the clarification count lives as long as the thread — each new session starts from the last one's", async () => {
    const { core, rec, store } = setup();
    /** Runs the clarify session of the last start: the orchestrator says `decision`, a question is answered by the thread's next message. */
    async function clarifyTurn(query: string, sid: string, decision: string): Promise<number> {
      expect(await core.submit(q(query, { workflow: "clarify", session_id: sid }))).toMatchObject({
        ok: true,
        created: true,
      });
      await core.handleInput(rec.inbox.at(-1)!);
      const reply = (task: TaskEnvelope, output: unknown) =>
        core.handleInput(
          resultFor({ task_id: task.task_id, role: task.role, op: task.op, attempt: task.attempt }, output, {}, sid),
        );
      for (let i = 0; i < 6; i++) {
        const loaded = (await store.load(sid))?.state;
        if (!loaded || loaded.meta.status !== "running") break;
        const task = rec.tasks().findLast((t) => t.session_id === sid);
        if (!task) break;
        const outputs: Record<string, unknown> = {
          "orchestrator.decide": { decision },
          "clarifier.ask": { question: "Which one do you mean?" },
          "researcher.gather": { query: "redis", passages: [], gaps: [] },
          "writer.synthesize": { answer: "Redis persists with the AOF." },
        };
        await reply(task, outputs[`${task.role}.${task.op}`]);
        if ((await store.load(sid))?.state.meta.status === "awaiting_user") {
          // the thread's next message is the waiting session's reply
          expect(await core.submit(q("The Redis one"))).toMatchObject({ ok: true, session_id: sid, replied: true });
          await core.handleInput(rec.inbox.at(-1)!);
        }
      }
      const done = (await store.load(sid))?.state;
      expect(done?.meta.status).toBe("completed");
      return done?.data.workflow === "clarify" ? done.data.clarification_count : -1;
    }
    expect(await clarifyTurn("Tell me more about it", "clarifysess00001", "CLARIFICATION")).toBe(1);
    const second = rec.inbox.length;
    expect(await clarifyTurn("And that one?", "clarifysess00002", "CLARIFICATION")).toBe(0);
    // the second session was handed the first's count: its second clarification met the cap (2 of 2) at the reply
    expect(rec.inbox[second]).toMatchObject({ kind: "start", carry: { clarification_count: 1 } });
    expect(await clarifyTurn("And the last one?", "clarifysess00003", "RESEARCH")).toBe(0);
  });

  test("messages given by the client replace the thread's own, bounded to the latest that fit", async () => {
    const { core, rec } = setup();
    const long = Array.from({ length: LIMITS.maxConversationMessages + 10 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `turn ${i}`,
    }));
    expect((await core.submit(q("Summarise our chat", { messages: long }))).ok).toBe(true);
    const start = rec.inbox.at(-1);
    const kept = start?.kind === "start" ? (start.messages ?? []) : [];
    expect(kept).toHaveLength(LIMITS.maxConversationMessages);
    expect(kept.at(-1)?.content).toBe(`turn ${LIMITS.maxConversationMessages + 9}`);
  });

  test("a start over the message limit (large attachments with a long conversation) is refused as payload_too_large, and nothing is created", async () => {
    const { core, rec, store } = setup();
    const attachments = [{ name: "big.txt", content_type: "text/plain" as const, content: "€".repeat(70_000) }];
    const turns = Array.from({ length: 8 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: "€".repeat(4000),
    }));
    const refused = await core.submit({
      v: SCHEMA_VERSION,
      query: "Sum it",
      session_id: "bigsession000001",
      options: { attachments },
      messages: turns,
    });
    expect(refused).toMatchObject({
      ok: false,
      error: {
        code: "payload_too_large",
        message: expect.stringContaining(`over the ${LIMITS.maxMessageBytes}-byte message limit`),
      },
    });
    expect(rec.inbox).toEqual([]);
    expect(await store.load("bigsession000001")).toBeNull();
    expect(
      await core.submit({
        v: SCHEMA_VERSION,
        query: "Sum it",
        session_id: "bigsession000002",
        options: { attachments },
      }),
    ).toMatchObject({ ok: true });
    expect(rec.inbox.at(-1)).toMatchObject({ kind: "start", options: { attachments } });
  });

  test("another owner's thread is refused as unknown, and nothing is created", async () => {
    const { core, rec, store } = setup();
    expect((await core.submit(q("What is 2 + 2?"))).ok).toBe(true);
    const before = rec.inbox.length;
    const bob = await core.submit(q("Let me in", { owner: "bob", session_id: "bobsession000001" }));
    expect(bob).toMatchObject({ ok: false, error: { code: "unknown_thread" } });
    const anon = await core.submit({
      v: SCHEMA_VERSION,
      query: "Let me in",
      thread_id: THREAD,
      session_id: "anonsession00001",
    });
    expect(anon).toMatchObject({ ok: false, error: { code: "unknown_thread" } });
    expect(rec.inbox.length).toBe(before);
    expect(await store.load("bobsession000001")).toBeNull();
    expect((await store.loadThread(THREAD))?.sessions).toHaveLength(1);
  });

  test("a message to a thread whose session waits for a person is that session's reply, applied once however often it is retried", async () => {
    const { core, rec, store } = setup();
    const waiting = {
      ...testSessionState("waitingsession01", 0),
      meta: {
        ...testSessionState("waitingsession01", 0).meta,
        status: "awaiting_user" as const,
        owner: "alice",
        thread_id: THREAD,
      },
    };
    await store.create(waiting);
    await store.attachToThread(THREAD, "alice", "waitingsession01", 1);
    const r1 = await core.submit(q("Blue, please", { idempotency_key: "msg-1" }));
    expect(r1).toMatchObject({
      ok: true,
      session_id: "waitingsession01",
      created: false,
      replied: true,
      thread_id: THREAD,
    });
    const reply = rec.inbox.at(-1);
    expect(reply).toMatchObject({ kind: "user_reply", session_id: "waitingsession01", text: "Blue, please" });
    // the retry answers with the same session and publishes nothing new
    const r2 = await core.submit(q("Blue, please", { idempotency_key: "msg-1" }));
    expect(r2).toMatchObject({ ok: true, session_id: "waitingsession01", created: false });
    expect(rec.inbox.filter((i) => i.kind === "user_reply")).toHaveLength(1);
    // a second, different message gets its own input id (the workflow drops it if no longer waiting)
    await core.submit(q("Actually red", { idempotency_key: "msg-2" }));
    const ids = rec.inbox.filter((i) => i.kind === "user_reply").map((i) => i.input_id);
    expect(new Set(ids).size).toBe(2);
    expect((await store.loadThread(THREAD))?.sessions).toEqual(["waitingsession01"]);
  });

  test("a retry keeps the session's own thread, even when the client proposes a new one each time (as a gateway does)", async () => {
    const { core, rec } = setup();
    const first = await core.submit(
      q("What is 2 + 2?", { session_id: "keepthread000001", idempotency_key: "same-task" }),
    );
    expect(first).toMatchObject({ ok: true, created: true, thread_id: THREAD });
    await core.handleInput(rec.inbox.at(-1)!); // started: version 1
    const retry = await core.submit(
      q("What is 2 + 2?", {
        session_id: "keepthread000002",
        idempotency_key: "same-task",
        thread_id: "thread-core-9999",
      }),
    );
    expect(retry).toEqual({
      v: SCHEMA_VERSION,
      ok: true,
      session_id: "keepthread000001",
      created: false,
      thread_id: THREAD,
      replied: false,
    });
  });

  test("a retry after the first attempt stopped before its start went out publishes the start and joins the thread", async () => {
    const { core, rec, store } = setup();
    const failing = {
      ...rec.publisher,
      publishInbox: async () => {
        throw new Error("broker unreachable");
      },
    };
    const crashed = createCoordinatorCore({
      store,
      publisher: failing,
      log,
      defaults: DEFAULTS,
      now: () => 1_700_000_000_000,
    });
    await expect(
      crashed.submit(q("What is 2 + 2?", { session_id: "halfdone00000001", idempotency_key: "half" })),
    ).rejects.toThrow(/broker/);
    expect((await store.load("halfdone00000001"))?.state.meta.version).toBe(0);
    const retry = await core.submit(
      q("What is 2 + 2?", { session_id: "halfdone00000002", idempotency_key: "half", thread_id: "thread-core-other" }),
    );
    expect(retry).toMatchObject({ ok: true, session_id: "halfdone00000001", thread_id: THREAD });
    expect(rec.inbox.at(-1)).toMatchObject({ kind: "start", session_id: "halfdone00000001" });
    expect((await store.loadThread(THREAD))?.sessions).toEqual(["halfdone00000001"]);
    expect(await store.loadThread("thread-core-other")).toBeNull();
  });

  test("a retried first submit after its session began waiting does not turn into a reply", async () => {
    const { core, rec, store } = setup();
    const first = await core.submit(q("Plan my trip", { session_id: "tripsession00001", idempotency_key: "trip" }));
    expect(first.ok).toBe(true);
    // the session now waits for a person (as a blackboard session asking a question would)
    const loaded = await store.load("tripsession00001");
    const pause = testCommit(loaded!.state, "in:pause");
    pause.state.meta.status = "awaiting_user";
    expect(await store.commit(pause)).toEqual({ ok: true });
    const retry = await core.submit(q("Plan my trip", { session_id: "tripsession00001", idempotency_key: "trip" }));
    expect(retry).toMatchObject({ ok: true, session_id: "tripsession00001", created: false, replied: false });
    expect(rec.inbox.filter((i) => i.kind === "user_reply")).toHaveLength(0);
  });
});
