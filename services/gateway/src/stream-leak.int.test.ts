import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { naming as makeNaming, type Naming } from "@agentmesh/contracts";
import { connectNats, createPublisher, type Publisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import {
  completeEvent,
  consumersOnEvents,
  readHop,
  sseReader,
  stageEvent,
  startTestGateway,
  tokenEvent,
  type SseMessage,
  type TestGateway,
} from "./test-support.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";

// A gateway listening on a port over a real NATS, its clients real HTTP connections: streams that
// are opened and abandoned in every way leave no JetStream consumer behind, and a client that
// resumes from any id it received loses and repeats nothing.

let nc: NatsConnection;
let n: Naming;
let gateway: TestGateway;
let pub: Publisher;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-leak-test" });
  n = makeNaming(uniquePrefix("gwl"));
  await provisionTestStreams(nc, n, 600_000);
  pub = createPublisher(nc, n, createLogger({ service: "test", level: "silent" }));
  gateway = await startTestGateway(nc, n);
});

afterAll(async () => {
  await gateway.close();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** GETs a session's events over HTTP; `signal` hangs the connection up. */
const open = (sid: string, signal: AbortSignal, lastId?: string | null) =>
  fetch(`${gateway.url}/api/v1/sessions/${sid}/events`, {
    headers: { authorization: `Bearer ${gateway.key}`, ...(lastId ? { "last-event-id": lastId } : {}) },
    signal,
  });

/** Waits until `cond` holds or `ms` pass (then the caller's assertion says what is wrong). */
async function settle(cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !(await cond())) await sleep(50);
}

/** One client: how it leaves its stream. */
type Leave = "during set-up" | "after the first event" | "mid-token-stream";

async function abandon(sid: string, how: Leave, i: number): Promise<void> {
  const ac = new AbortController();
  if (how === "during set-up") {
    // hung up a moment after the request went out, before or while the stream is being set up
    setTimeout(() => ac.abort(), i % 10);
    await open(sid, ac.signal).catch(() => null);
    ac.abort();
    return;
  }
  const res = await open(sid, ac.signal);
  const reader = sseReader(res);
  const first = await reader.next();
  if (first === null) throw new Error(`the stream of ${sid} ended before its first event`);
  // mid-token-stream: it leaves right after a token delta, while the answer streams
  for (let m = first; how === "mid-token-stream" && m.event !== "token";) {
    const next = await reader.next();
    if (next === null) throw new Error(`the stream of ${sid} ended before a token`);
    m = next;
  }
  ac.abort();
  await reader.cancel();
}

describe("a gateway's streams leave no JetStream consumer behind", () => {
  it("1,000 streams opened and abandoned (a third during set-up, a third after the first event, a third mid-token-stream)", async () => {
    // the replica's fixed set: its one feed of live events
    expect(await consumersOnEvents(nc, n)).toBe(1);
    const finished = "gwleakfinished001";
    const running = "gwleakrunning0001";
    await gateway.own(finished);
    await gateway.own(running);
    for (let v = 1; v <= 5; v++) await pub.publishEvent(stageEvent(finished, v));
    await pub.publishEvent(completeEvent(finished, 6));
    await pub.publishEvent(stageEvent(running, 1));
    // the running session keeps speaking (its answer streaming, a stage now and then) while clients come and go
    let v = 2;
    let seq = 0;
    const ticker = setInterval(() => {
      if (seq % 10 === 9) void pub.publishEvent(stageEvent(running, v++)).catch(() => {});
      void pub.publishTokens(tokenEvent(running, { offset: seq * 6, delta: "words ", seq: seq++ })).catch(() => {});
    }, 5);
    const plan: Array<[string, Leave]> = Array.from({ length: 1000 }, (_, i) => {
      const how: Leave = i % 3 === 0 ? "during set-up" : i % 3 === 1 ? "after the first event" : "mid-token-stream";
      return [how === "mid-token-stream" || i % 2 === 0 ? running : finished, how];
    });
    try {
      for (let at = 0; at < plan.length; at += 100)
        await Promise.all(plan.slice(at, at + 100).map(([sid, how], i) => abandon(sid, how, at + i)));
    } finally {
      clearInterval(ticker);
    }
    await settle(async () => gateway.gw.openStreams() === 0 && (await consumersOnEvents(nc, n)) === 1, 10_000);
    expect(gateway.gw.openStreams()).toBe(0);
    expect(gateway.hub.stats()).toEqual({ sessions: 0, listeners: 0 });
    expect(await consumersOnEvents(nc, n)).toBe(1);
  }, 120_000);
});

describe("resuming over HTTP", () => {
  it("a client that hangs up after every 1-3 events and resumes from the last id it received reads each event once, in order", async () => {
    const sid = "gwleakresume00001";
    await gateway.own(sid);
    for (let v = 1; v <= 10; v++) await pub.publishEvent(stageEvent(sid, v));
    // the rest is published while the client hops
    const publishing = (async () => {
      for (let v = 11; v <= 40; v++) {
        await sleep(15);
        await pub.publishEvent(stageEvent(sid, v));
      }
      await pub.publishEvent(completeEvent(sid, 41));
    })();
    const got: SseMessage[] = [];
    let hops = 0;
    for (let done = false; !done; hops++) {
      const ac = new AbortController();
      const reader = sseReader(await open(sid, ac.signal, got.at(-1)?.id));
      done = await readHop(reader, 1 + (hops % 3), got);
      ac.abort();
      await reader.cancel();
    }
    await publishing;
    expect(hops).toBeGreaterThan(10);
    const versions = got.map((m) => (JSON.parse(m.data) as { version: number }).version);
    expect(versions).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    for (const m of got) expect(m.id).toMatch(/^\d+:\d+:0$/);
  });

  it("a resume from any id of a finished session gives exactly the events after it", async () => {
    const sid = "gwleakresume00002";
    await gateway.own(sid);
    for (let v = 1; v <= 6; v++) await pub.publishEvent(stageEvent(sid, v));
    await pub.publishEvent(completeEvent(sid, 7));
    const read = async (lastId: string | null) => {
      const r = sseReader(await open(sid, AbortSignal.timeout(10_000), lastId));
      const out: SseMessage[] = [];
      for (let m = await r.next(); m !== null; m = await r.next()) out.push(m);
      return out;
    };
    const all = await read(null);
    expect(all.map((m) => m.event)).toEqual([...Array.from({ length: 6 }, () => "stage"), "complete"]);
    for (const [i, m] of all.entries())
      expect((await read(m.id)).map((x) => x.id)).toEqual(all.slice(i + 1).map((x) => x.id));
  });
});
