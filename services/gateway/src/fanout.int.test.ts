import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SCHEMA_VERSION, naming as makeNaming, type Naming, type SessionEvent } from "@agentmesh/contracts";
import { connectNats, createPublisher, type Publisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { createEventHub, type EventHub } from "./fanout.js";
import { eventId, parseEventId, sessionStream, type EventCursor, type StreamItem } from "./stream.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";

// One replica's hub: live events through one ordered consumer, replays by direct get, and the
// hand-over between them.

let nc: NatsConnection;
let n: Naming;
let hub: EventHub;
let pub: Publisher;
const log = createLogger({ service: "test", level: "silent" });
let sidCounter = 0;
const newSid = () => `gwfanout${process.pid}x${++sidCounter}`;

const stage = (sid: string, version: number, index = 0): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: sid,
  version,
  index,
  timestamp: 1_700_000_000_000 + version,
  type: "stage",
  name: "planner",
  status: "running",
  description: `${version}:${index}`,
});
const complete = (sid: string, version: number): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: sid,
  version,
  index: 0,
  timestamp: 1_700_000_000_000 + version,
  type: "complete",
  status: "completed",
  final_answer: "4",
  final_reasoning_trace: "2 + 2",
});

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-fanout-test" });
  n = makeNaming(uniquePrefix("gwf"));
  await provisionTestStreams(nc, n);
  pub = createPublisher(nc, n, log);
  hub = createEventHub(nc, n, log);
  await hub.ready();
});

afterAll(async () => {
  await hub.stop();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

const consumersOnEvents = async () =>
  (await (await jetstreamManager(nc)).consumers.list(n.streams.events).next()).length;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const key = (i: StreamItem) => (i.kind === "event" ? `${i.event.version}:${i.event.index}` : `token:${i.event.delta}`);

/** Reads a stream until it ends (or 8 s pass: then it is aborted and the test sees what came). */
async function collect(h: EventHub, sid: string, after: EventCursor | null, out: StreamItem[] = []) {
  const signal = AbortSignal.timeout(8000);
  for await (const item of sessionStream(h, sid, { after, tokens: false, signal })) out.push(item);
  return out;
}

describe("the replica's event hub", () => {
  it("serves 40 streams of 10 sessions through its one consumer, each stream its session's events in order", async () => {
    const sids = Array.from({ length: 10 }, newSid);
    for (const sid of sids) await pub.publishEvent(stage(sid, 1));
    const streams = sids.flatMap((sid) => Array.from({ length: 4 }, () => collect(hub, sid, null)));
    await sleep(300);
    expect(hub.stats()).toEqual({ sessions: 10, listeners: 40 });
    expect(await consumersOnEvents()).toBe(1);
    for (const sid of sids) await pub.publishEvent(stage(sid, 2));
    for (const sid of sids) await pub.publishEvent(complete(sid, 3));
    const got = await Promise.all(streams);
    for (const items of got) expect(items.map(key)).toEqual(["1:0", "2:0", "3:0"]);
    expect(hub.stats()).toEqual({ sessions: 0, listeners: 0 });
    expect(await consumersOnEvents()).toBe(1);
  });

  it("sends each event with the stream sequence of its message; a resume from any id gives exactly the rest", async () => {
    const sid = newSid();
    for (let v = 1; v <= 4; v++) await pub.publishEvent(stage(sid, v));
    await pub.publishEvent(complete(sid, 5));
    const all = await collect(hub, sid, null);
    expect(all.map(key)).toEqual(["1:0", "2:0", "3:0", "4:0", "5:0"]);
    const seqs = all.map((i) => (i.kind === "event" ? i.seq : 0));
    expect(seqs.every((s, i) => s > (seqs[i - 1] ?? 0))).toBe(true);
    for (const [i, item] of all.entries()) {
      if (item.kind !== "event") continue;
      const id = eventId({ seq: item.seq, version: item.event.version, index: item.event.index });
      const rest = await collect(hub, sid, parseEventId(id) ?? null);
      expect(rest.map(key)).toEqual(all.slice(i + 1).map(key));
    }
  });

  it("hands over from replay to live with no gap and no repeat: events stored during and right after the replay", async () => {
    const sid = newSid();
    for (let v = 1; v <= 5; v++) await pub.publishEvent(stage(sid, v));
    // a slow replay, so live events are stored while it reads, and one that lingers after its
    // last read, so more are stored between that read and the stream going live
    let readAll = false;
    const slow: EventHub = {
      ...hub,
      replay: async function* (s, from, tokens) {
        for await (const b of hub.replay(s, from, tokens)) {
          await sleep(60);
          yield b;
        }
        readAll = true;
        await sleep(400);
      },
    };
    const run = collect(slow, sid, null);
    for (let v = 6; v <= 8; v++) {
      await sleep(25);
      await pub.publishEvent(stage(sid, v));
    }
    while (!readAll) await sleep(5);
    for (let v = 9; v <= 10; v++) await pub.publishEvent(stage(sid, v));
    await pub.publishEvent(complete(sid, 11));
    const got = await run;
    expect(got.map(key)).toEqual([...Array.from({ length: 10 }, (_, i) => `${i + 1}:0`), "11:0"]);
  });

  it("a replay answered by a lagging stream replica (missing the newest message) is made whole from what the feed delivered", async () => {
    const sid = newSid();
    for (let v = 1; v <= 3; v++) await pub.publishEvent(stage(sid, v));
    await pub.publishEvent(complete(sid, 4));
    await sleep(200); // the feed has delivered all four
    const lagging: EventHub = {
      ...hub,
      replay: async function* (s, from, tokens) {
        for await (const b of hub.replay(s, from, tokens))
          if (b.kind !== "events" || b.events[0]?.type !== "complete") yield b;
      },
    };
    expect((await collect(lagging, sid, null)).map(key)).toEqual(["1:0", "2:0", "3:0", "4:0"]);
  });

  it("a replay from a given stream sequence reads only the messages from it on", async () => {
    const sid = newSid();
    await pub.publishEvent(stage(sid, 1));
    await sleep(100);
    const from = hub.position() + 1;
    await pub.publishEvent(stage(sid, 2));
    await pub.publishEvent(complete(sid, 3));
    const signal = AbortSignal.timeout(8000);
    const got: StreamItem[] = [];
    for await (const item of sessionStream(hub, sid, { after: null, fromSeq: from, tokens: false, signal }))
      got.push(item);
    expect(got.map(key)).toEqual(["2:0", "3:0"]);
    expect(got[0]?.kind === "event" ? got[0].seq : 0).toBe(from);
  });

  it("a stream whose signal aborted before it started reads nothing and listens to nothing", async () => {
    const sid = newSid();
    await pub.publishEvent(stage(sid, 1));
    const ac = new AbortController();
    ac.abort();
    const got: StreamItem[] = [];
    for await (const item of sessionStream(hub, sid, { after: null, tokens: true, signal: ac.signal })) got.push(item);
    expect(got).toEqual([]);
    expect(hub.stats().listeners).toBe(0);
  });

  it("ends its streams when it stops, and deletes its consumer", async () => {
    const own = createEventHub(nc, n, log);
    const sid = newSid();
    await pub.publishEvent(stage(sid, 1));
    const items: StreamItem[] = [];
    const run = collect(own, sid, null, items).then(
      () => "ended",
      (err: unknown) => `failed: ${(err as Error).message}`,
    );
    while (items.length === 0) await sleep(20);
    expect(await consumersOnEvents()).toBe(2);
    await own.stop();
    expect(await run).toBe("failed: the gateway is shutting down");
    expect(await consumersOnEvents()).toBe(1);
    // a listener that comes after the feed ended hears so at once, instead of waiting for nothing
    const closed: string[] = [];
    own.listen(sid, { message: () => {}, tokens: false, closed: (err) => closed.push((err as Error).message) });
    expect(closed).toEqual(["the gateway is shutting down"]);
  });
});
