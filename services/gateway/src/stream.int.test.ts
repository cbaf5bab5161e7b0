import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SCHEMA_VERSION, naming as makeNaming, type Naming, type SessionEvent } from "@agentmesh/contracts";
import { connectNats, createPublisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { createEventHub, type EventHub } from "./fanout.js";
import { parseEventId, sessionStream, type EventCursor, type StreamItem } from "./stream.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";
import { tokenEvent } from "./test-support.js";

let nc: NatsConnection;
let n: Naming;
let hub: EventHub;
const log = createLogger({ service: "test", level: "silent" });
const SID = "gwstream00000001";

const stage = (version: number, index: number, name = "planner"): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: SID,
  version,
  index,
  timestamp: 1_700_000_000_000 + version,
  type: "stage",
  name,
  status: "running",
  description: `${version}:${index}`,
});
const complete = (version: number): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: SID,
  version,
  index: 0,
  timestamp: 1_700_000_000_000 + version,
  type: "complete",
  status: "completed",
  final_answer: "4",
  final_reasoning_trace: "2 + 2",
});

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-stream-test" });
  n = makeNaming(uniquePrefix("gws"));
  await provisionTestStreams(nc, n);
  const pub = createPublisher(nc, n, log);
  for (const e of [stage(1, 0), stage(2, 0), stage(2, 1)]) await pub.publishEvent(e);
  // The same event stored twice: published again under another message id, as a republish after the de-dup window would.
  await jetstream(nc).publish(n.events(SID), JSON.stringify(stage(2, 0)), { msgID: `${SID}:2:0:again` });
  await pub.publishEvent(stage(3, 0));
  hub = createEventHub(nc, n, log);
});

afterAll(async () => {
  await hub.stop();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

const ids = (items: StreamItem[]) =>
  items.map((i) => (i.kind === "event" ? `${i.event.version}:${i.event.index}` : `token:${i.event.delta}`));

/** Collects a stream until `complete`, or until `stopAfter` items (then aborts it). */
async function collect(after: EventCursor | null, stopAfter = Infinity, waitMs = 5000): Promise<StreamItem[]> {
  const ac = new AbortController();
  const out: StreamItem[] = [];
  const guard = setTimeout(() => ac.abort(), waitMs);
  for await (const item of sessionStream(hub, SID, { after, tokens: false, signal: ac.signal })) {
    out.push(item);
    if (out.length >= stopAfter) ac.abort();
  }
  clearTimeout(guard);
  return out;
}

/** Collects a session's stream (with its tokens when asked) until `complete`, or `stopAfter` items. */
async function collectOf(
  sid: string,
  after: EventCursor | null,
  o: { tokens: boolean; stopAfter?: number },
): Promise<StreamItem[]> {
  const ac = new AbortController();
  const out: StreamItem[] = [];
  const guard = setTimeout(() => ac.abort(), 5000);
  for await (const item of sessionStream(hub, sid, { after, tokens: o.tokens, signal: ac.signal })) {
    out.push(item);
    if (out.length >= (o.stopAfter ?? Infinity)) ac.abort();
  }
  clearTimeout(guard);
  return out;
}

describe("a session's SSE source: the EVENTS stream, in order, each event once", () => {
  it("replays from the start without the stored duplicate, follows live events, and ends after complete", async () => {
    const live = collect(null);
    await new Promise((r) => setTimeout(r, 200));
    await createPublisher(nc, n, log).publishEvent(complete(4));
    expect(ids(await live)).toEqual(["1:0", "2:0", "2:1", "3:0", "4:0"]);
  });

  it("after a Last-Event-ID it sends exactly the later events, from any connection", async () => {
    expect(ids(await collect({ version: 2, index: 0 }))).toEqual(["2:1", "3:0", "4:0"]);
    expect(ids(await collect({ version: 3, index: 0 }))).toEqual(["4:0"]);
    expect(ids(await collect({ version: 4, index: 0 }, 1, 3000))).toEqual([]); // the client has the end: the stream ends at once (stream-end.int.test.ts)
  });

  it("resuming after every prefix of the stream gives the rest, so disconnects anywhere lose and repeat nothing", async () => {
    const all = await collect(null);
    for (let cut = 1; cut < all.length; cut++) {
      const first = await collect(null, cut);
      const last = first.at(-1);
      const rest = await collect(last?.kind === "event" ? last.event : null);
      expect([...ids(first), ...ids(rest)]).toEqual(ids(all));
    }
  });

  it("token deltas come stored, in the stream's one order with the events, with ids that resume exactly after them", async () => {
    const sid = "gwstream00000002";
    const pub = createPublisher(nc, n, log);
    let offset = 0;
    const token = (task: string, delta: string) => {
      const t = tokenEvent(sid, { task, offset, delta, op: "write" });
      offset += delta.length;
      return pub.publishTokens(t);
    };
    await pub.publishEvent({ ...stage(1, 0), session_id: sid });
    const whole = collectOf(sid, null, { tokens: true });
    await new Promise((r) => setTimeout(r, 200));
    for (const d of ["Hel", "lo, ", "wor"]) await token("1.0.0", d);
    await pub.publishEvent({ ...stage(2, 0), session_id: sid });
    for (const d of ["ld", "!"]) await token("1.0.0", d);
    await pub.publishEvent({ ...complete(3), session_id: sid });
    const all = await whole;
    expect(ids(all)).toEqual(["1:0", "token:Hel", "token:lo, ", "token:wor", "2:0", "token:ld", "token:!", "3:0"]);
    // a token's id: its own stream sequence and the event before it
    const tok = all[1]!;
    expect(tok.id).toBe(`${tok.seq}:1:0`);
    for (let cut = 1; cut < all.length; cut++) {
      const first = await collectOf(sid, null, { tokens: true, stopAfter: cut });
      const rest = await collectOf(sid, parseEventId(first.at(-1)!.id) ?? null, { tokens: true });
      expect([...ids(first), ...ids(rest)]).toEqual(ids(all));
    }
  });

  it("a redelivered task's tokens (the same task_id from seq 0 again) go out once", async () => {
    const sid = "gwstream00000003";
    const pub = createPublisher(nc, n, log);
    await pub.publishEvent({ ...stage(1, 0), session_id: sid });
    const ac = new AbortController();
    const got: string[] = [];
    const done = (async () => {
      for await (const item of sessionStream(hub, sid, { after: null, tokens: true, signal: ac.signal })) {
        if (item.kind === "token")
          got.push(`${item.event.task_id.slice(-3)}#${item.event.seq ?? "-"}:${item.event.delta}`);
        else if (item.event.version === 2) ac.abort();
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    const token = (task: string, seq: number, delta: string) =>
      pub.publishTokens({
        v: SCHEMA_VERSION,
        session_id: sid,
        version: 1,
        index: 0,
        timestamp: 1,
        type: "token",
        task_id: `${sid}.${task}`,
        role: "writer",
        op: "write",
        attempt: 0,
        seq,
        delta,
      });
    // the first delivery streams two deltas and dies; the redelivery streams all three; another task streams too
    await token("1.0.0", 0, "Hel");
    await token("1.0.0", 1, "lo ");
    await token("1.0.0", 0, "Hel");
    await token("1.1.0", 0, "Other");
    await token("1.0.0", 1, "lo ");
    await token("1.0.0", 2, "world");
    await new Promise((r) => setTimeout(r, 200));
    await pub.publishEvent({ ...stage(2, 0), session_id: sid });
    const guard = setTimeout(() => ac.abort(), 5000);
    await done;
    clearTimeout(guard);
    expect(got).toEqual(["0.0#0:Hel", "0.0#1:lo ", "1.0#0:Other", "0.0#2:world"]);
  });

  it("reads a batch the previous release stored (each event stamped `at`) and hands its events out with `timestamp`", async () => {
    const sid = "gwstreamlegacy01";
    const old = (index: number, at: number) => {
      const { timestamp: _t, ...rest } = { ...stage(1, index), session_id: sid };
      return { ...rest, at };
    };
    const batch = {
      v: SCHEMA_VERSION,
      session_id: sid,
      version: 1,
      events: [old(0, 1_600_000_000_000), old(1, 1_600_000_000_001)],
    };
    await jetstream(nc).publish(n.events(sid), JSON.stringify(batch), { msgID: `${sid}:1:0+2` });
    await createPublisher(nc, n, log).publishEvent({
      v: SCHEMA_VERSION,
      session_id: sid,
      version: 2,
      index: 0,
      timestamp: 1_600_000_000_002,
      type: "complete",
      status: "completed",
      final_answer: "done",
      final_reasoning_trace: "",
    });
    const ac = new AbortController();
    const got: SessionEvent[] = [];
    const guard = setTimeout(() => ac.abort(), 5000);
    for await (const item of sessionStream(hub, sid, { after: null, tokens: false, signal: ac.signal })) {
      if (item.kind === "event") got.push(item.event);
      if (item.event.type === "complete") ac.abort();
    }
    clearTimeout(guard);
    expect(got.map((e) => [`${e.version}:${e.index}`, e.timestamp])).toEqual([
      ["1:0", 1_600_000_000_000],
      ["1:1", 1_600_000_000_001],
      ["2:0", 1_600_000_000_002],
    ]);
    for (const e of got) expect(e).not.toHaveProperty("at");
  });
});
