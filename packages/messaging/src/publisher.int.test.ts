import {
  AgentmeshError,
  HEADERS,
  LIMITS,
  SCHEMA_VERSION,
  naming as makeNaming,
  taskId,
  type SessionEvent,
} from "@agentmesh/contracts";
import { jsonDepthOver } from "./decode.js";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { followEvents } from "./events.js";
import { createPublisher } from "./publisher.js";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import {
  connectTest,
  dropStreams,
  freshNaming,
  makeTask,
  recordingLog,
  sessionId,
  streamMessages,
  waitFor,
} from "./test-support.js";

let nc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  nc = await connectTest("messaging-publisher-test");
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});
afterAll(async () => {
  await nc.drain();
});

async function setup() {
  const { naming } = await freshNaming(nc);
  cleanups.push(() => dropStreams(nc, naming));
  return { naming, publisher: createPublisher(nc, naming, recordingLog()) };
}

const stage = (sid: string, version: number, index: number): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: sid,
  version,
  index,
  timestamp: 1_700_000_000_000 + version,
  type: "stage",
  name: "planner",
  status: "running",
  description: `v${version}.${index}`,
});

describe("createPublisher", () => {
  it("publishes a task with msg id = task id and the standard headers; a repeat is de-duplicated", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    const task = makeTask(sid);
    await publisher.publishTask(task);
    await publisher.publishTask(task);
    const msgs = await streamMessages(nc, naming.streams.tasks);
    expect(msgs).toHaveLength(1);
    const m = msgs[0]!;
    expect(m.subject).toBe(naming.task("planner", "plan"));
    expect(m.header.get("Nats-Msg-Id")).toBe(task.task_id);
    expect(m.header.get(HEADERS.traceparent)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(m.header.get(HEADERS.sessionId)).toBe(sid);
    expect(m.header.get(HEADERS.taskId)).toBe(task.task_id);
    expect(m.header.get(HEADERS.schemaVersion)).toBe("1");
    expect(m.json()).toEqual(task);
  });

  it("refuses a body over 256 KB with payload_too_large and sends nothing", async () => {
    const { naming, publisher } = await setup();
    const big = makeTask(sessionId(), { input: "x".repeat(256 * 1024) });
    const err = await publisher.publishTask(big).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentmeshError);
    expect(err).toMatchObject({ code: "payload_too_large", retryable: false });
    const info = await (await jetstreamManager(nc)).streams.info(naming.streams.tasks);
    expect(info.state.messages).toBe(0);
  });

  it("refuses a message that fails its schema with invalid_message", async () => {
    const { publisher } = await setup();
    const bad = { ...makeTask(sessionId()), task_id: "not-a-task-id" };
    await expect(publisher.publishTask(bad)).rejects.toMatchObject({ code: "invalid_message" });
  });

  it("publishes an outbox in order: tasks to TASKS, its events as one message with id <sid>:<version>:<first index>+<count>, cancel on core NATS", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    const cancels: Msg[] = [];
    const sub = nc.subscribe(naming.cancelAll, { callback: (_e, m) => void cancels.push(m) });
    await publisher.publishOutbox([
      { kind: "task", task: makeTask(sid, { task_id: taskId(sid, 3, 0, 0) }) },
      { kind: "event", event: stage(sid, 3, 0) },
      { kind: "event", event: stage(sid, 3, 1) },
      { kind: "cancel", notice: { v: SCHEMA_VERSION, session_id: sid, reason: "stop" } },
    ]);
    const events = await streamMessages(nc, naming.streams.events);
    expect(events.map((e) => e.header.get("Nats-Msg-Id"))).toEqual([`${sid}:3:0+2`]);
    expect(events[0]!.subject).toBe(naming.events(sid));
    expect(events[0]!.json()).toEqual({
      v: SCHEMA_VERSION,
      session_id: sid,
      version: 3,
      events: [stage(sid, 3, 0), stage(sid, 3, 1)],
    });
    expect((await streamMessages(nc, naming.streams.tasks)).map((t) => t.header.get("Nats-Msg-Id"))).toEqual([
      taskId(sid, 3, 0, 0),
    ]);
    await waitFor(() => cancels.length === 1, 5000, "cancel notice");
    expect(cancels[0]!.subject).toBe(naming.cancel(sid));
    expect(cancels[0]!.json()).toEqual({ v: SCHEMA_VERSION, session_id: sid, reason: "stop" });
    sub.unsubscribe();
  });
});

describe("a transition's events as one message", () => {
  it("a republished outbox is a duplicate: the stream keeps one message, readers see each event once", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    const outbox = [0, 1, 2].map((i) => ({ kind: "event" as const, event: stage(sid, 4, i) }));
    await publisher.publishOutbox(outbox);
    await publisher.publishOutbox(outbox);
    expect(await streamMessages(nc, naming.streams.events)).toHaveLength(1);
    const got: number[] = [];
    for await (const e of followEvents(nc, naming, sid)) if (got.push(e.index) === 3) break;
    expect(got).toEqual([0, 1, 2]);
  });

  it("splits events that would not fit in one message, in index order, the same way each time", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    // ~100 KB each: three do not fit in 256 KB together
    const huge = (i: number): SessionEvent => ({
      v: SCHEMA_VERSION,
      session_id: sid,
      version: 5,
      index: i,
      timestamp: 1_700_000_000_005,
      type: "complete",
      status: "completed",
      final_answer: "a".repeat(100_000),
      final_reasoning_trace: "t",
    });
    const outbox = [0, 1, 2, 3].map((i) => ({ kind: "event" as const, event: i === 3 ? stage(sid, 5, 3) : huge(i) }));
    await publisher.publishOutbox(outbox);
    await publisher.publishOutbox(outbox);
    const msgs = await streamMessages(nc, naming.streams.events);
    expect(msgs.map((m) => m.header.get("Nats-Msg-Id"))).toEqual([`${sid}:5:0+2`, `${sid}:5:2+2`]);
    for (const m of msgs) expect(m.data.byteLength).toBeLessThanOrEqual(256 * 1024);
    const got: number[] = [];
    for await (const e of followEvents(nc, naming, sid)) if (got.push(e.index) === 4) break;
    expect(got).toEqual([0, 1, 2, 3]);
  });

  it("an event that fits only on its own (the batch's nesting would pass the depth limit) goes out bare, and is read", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    const nest = (n: number): Record<string, unknown> => (n === 0 ? { x: 1 } : { a: nest(n - 1) });
    const call = (n: number): SessionEvent => ({
      v: SCHEMA_VERSION,
      session_id: sid,
      version: 6,
      index: 1,
      timestamp: 1_700_000_000_006,
      type: "tool_call",
      id: "call-1",
      task_id: "t",
      tool: "calculator",
      args: nest(n),
      args_truncated: false,
    });
    // the deepest event that is still under the depth limit on its own
    let n = 70;
    while (jsonDepthOver(new TextEncoder().encode(JSON.stringify(call(n))), LIMITS.maxJsonDepth)) n--;
    const outbox = [
      { kind: "event" as const, event: stage(sid, 6, 0) },
      { kind: "event" as const, event: call(n) },
      { kind: "event" as const, event: stage(sid, 6, 2) },
    ];
    await publisher.publishOutbox(outbox);
    await publisher.publishOutbox(outbox);
    const msgs = await streamMessages(nc, naming.streams.events);
    expect(msgs.map((m) => m.header.get("Nats-Msg-Id"))).toEqual([`${sid}:6:0+1`, `${sid}:6:1`, `${sid}:6:2+1`]);
    const got: string[] = [];
    for await (const e of followEvents(nc, naming, sid)) if (got.push(`${e.index}:${e.type}`) === 3) break;
    expect(got).toEqual(["0:stage", "1:tool_call", "2:stage"]);
  });

  it("a reader skips only the event of a batch it cannot read, and each event it already had", async () => {
    const { naming } = await setup();
    const sid = sessionId();
    const js = jetstream(nc);
    // an earlier version's coordinator left event 0 bare and crashed; the batch re-published after carries 0 and 1 again
    await js.publish(naming.events(sid), JSON.stringify(stage(sid, 7, 0)), { msgID: `${sid}:7:0` });
    await js.publish(
      naming.events(sid),
      JSON.stringify({ v: SCHEMA_VERSION, session_id: sid, version: 7, events: [stage(sid, 7, 0), stage(sid, 7, 1)] }),
      { msgID: `${sid}:7:0+2` },
    );
    // a newer event type this reader does not know, between two it does
    await js.publish(
      naming.events(sid),
      JSON.stringify({
        v: SCHEMA_VERSION,
        session_id: sid,
        version: 8,
        events: [stage(sid, 8, 0), { ...stage(sid, 8, 1), type: "hologram" }, stage(sid, 8, 2)],
      }),
    );
    const log = recordingLog();
    const got: string[] = [];
    for await (const e of followEvents(nc, naming, sid, { log })) if (got.push(`${e.version}.${e.index}`) === 4) break;
    expect(got).toEqual(["7.0", "7.1", "8.0", "8.2"]);
    expect(log.lines.filter((l) => l.msg === "skipping a malformed event")).toHaveLength(1);
  });

  it("refuses a batch mixing sessions or versions, or out of index order, and sends nothing", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    await expect(publisher.publishEvents([stage(sid, 1, 0), stage(sessionId(), 1, 1)])).rejects.toMatchObject({
      code: "invalid_message",
    });
    await expect(publisher.publishEvents([stage(sid, 1, 0), stage(sid, 2, 1)])).rejects.toMatchObject({
      code: "invalid_message",
    });
    await expect(publisher.publishEvents([stage(sid, 1, 1), stage(sid, 1, 0)])).rejects.toMatchObject({
      code: "invalid_message",
    });
    expect(await streamMessages(nc, naming.streams.events)).toHaveLength(0);
  });

  it("a reader skips a forged batch naming another session, and still reads a bare event written before batches", async () => {
    const { naming } = await setup();
    const sid = sessionId();
    const js = jetstream(nc);
    await js.publish(naming.events(sid), JSON.stringify(stage(sid, 1, 0)));
    const other = sessionId();
    await js.publish(
      naming.events(sid),
      JSON.stringify({ v: SCHEMA_VERSION, session_id: other, version: 2, events: [stage(other, 2, 0)] }),
    );
    await js.publish(
      naming.events(sid),
      JSON.stringify({ v: SCHEMA_VERSION, session_id: sid, version: 2, events: [stage(sid, 2, 0), stage(sid, 2, 1)] }),
    );
    const log = recordingLog();
    const got: string[] = [];
    for await (const e of followEvents(nc, naming, sid, { log })) if (got.push(`${e.version}.${e.index}`) === 3) break;
    expect(got).toEqual(["1.0", "2.0", "2.1"]);
    expect(log.lines.some((l) => l.msg === "skipping a malformed event")).toBe(true);
  });
});

describe("followEvents", () => {
  it("replays a session's events from the start, then follows live ones, skipping malformed and other sessions", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    const other = sessionId();
    await publisher.publishEvent(stage(sid, 1, 0));
    await publisher.publishEvent(stage(other, 1, 0));
    await jetstream(nc).publish(naming.events(sid), "{not json");
    await jetstream(nc).publish(naming.events(sid), JSON.stringify({ ...stage(sid, 1, 1), v: 9 }));
    await publisher.publishEvent(stage(sid, 1, 2));

    const ac = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const e of followEvents(nc, naming, sid, { signal: ac.signal })) {
        seen.push(`${e.session_id === sid ? "me" : "other"}:${e.version}.${e.index}`);
      }
    })();
    await waitFor(() => seen.length === 2, 5000, "replayed events");
    await publisher.publishEvent(stage(sid, 2, 0));
    await waitFor(() => seen.length === 3, 5000, "live event");
    ac.abort();
    await done;
    expect(seen).toEqual(["me:1.0", "me:1.2", "me:2.0"]);
  });

  it("ends when the caller breaks out of the loop", async () => {
    const { naming, publisher } = await setup();
    const sid = sessionId();
    await publisher.publishEvent(stage(sid, 1, 0));
    await publisher.publishEvent(stage(sid, 1, 1));
    const got: number[] = [];
    for await (const e of followEvents(nc, naming, sid)) {
      got.push(e.index);
      if (got.length === 2) break;
    }
    expect(got).toEqual([0, 1]);
  });

  it("waits past the client's 5 s default for a publish ack: a busy server's late ack is not a failure", async () => {
    // no streams under this prefix: a plain subscriber acks the publish, 6 s late, as a starved server would
    const naming = makeNaming(uniquePrefix("msgslow"));
    const publisher = createPublisher(nc, naming, recordingLog());
    const task = makeTask(sessionId());
    const sub = nc.subscribe(naming.task("planner", "plan"), {
      max: 1,
      callback: (_err, m: Msg) =>
        void setTimeout(() => m.respond(JSON.stringify({ stream: naming.streams.tasks, seq: 1 })), 6000),
    });
    const t0 = performance.now();
    await expect(publisher.publishTask(task)).resolves.toBeUndefined();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(5900);
    sub.unsubscribe();
  }, 20_000);
});
