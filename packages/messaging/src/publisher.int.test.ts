import { AgentmeshError, HEADERS, SCHEMA_VERSION, taskId, type SessionEvent } from "@agentmesh/contracts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { followEvents } from "./events.js";
import { createPublisher } from "./publisher.js";
import { connectTest, dropStreams, freshNaming, makeTask, recordingLog, sessionId, streamMessages, waitFor } from "./test-support.js";

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
  v: SCHEMA_VERSION, session_id: sid, version, index, at: 1_700_000_000_000 + version, type: "stage", name: "planner", status: "running", description: `v${version}.${index}`,
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

  it("publishes an outbox in order: tasks to TASKS, events with <sid>:<version>:<index> ids, cancel on core NATS", async () => {
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
    expect(events.map((e) => e.header.get("Nats-Msg-Id"))).toEqual([`${sid}:3:0`, `${sid}:3:1`]);
    expect((await streamMessages(nc, naming.streams.tasks)).map((t) => t.header.get("Nats-Msg-Id"))).toEqual([taskId(sid, 3, 0, 0)]);
    await waitFor(() => cancels.length === 1, 5000, "cancel notice");
    expect(cancels[0]!.subject).toBe(naming.cancel(sid));
    expect(cancels[0]!.json()).toEqual({ v: SCHEMA_VERSION, session_id: sid, reason: "stop" });
    sub.unsubscribe();
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
});
