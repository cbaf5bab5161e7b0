import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { naming as makeNaming, type Naming } from "@agentmesh/contracts";
import { connectNats, createPublisher, type Publisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import {
  completeEvent,
  sseReader,
  stageEvent,
  startTestGateway,
  type SseMessage,
  type TestGateway,
} from "./test-support.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";

// A client that stops reading must not make its replica hold its session's events without bound:
// past the stream's buffer the stream ends with an `error` event, and the client resumes from the
// last id it received without a gap.

let nc: NatsConnection;
let n: Naming;
let gateway: TestGateway;
let pub: Publisher;
const BUFFER = 16 * 1024;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-buffer-test" });
  n = makeNaming(uniquePrefix("gwb"));
  await provisionTestStreams(nc, n);
  pub = createPublisher(nc, n, createLogger({ service: "test", level: "silent" }));
  gateway = await startTestGateway(nc, n, { streamBufferBytes: BUFFER });
});

afterAll(async () => {
  await gateway.close();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Opens the session's events in process (the response body is read only when the test reads it). */
const open = (sid: string, lastId?: string) =>
  gateway.gw.app.request(`/api/v1/sessions/${sid}/events`, {
    headers: { authorization: `Bearer ${gateway.key}`, ...(lastId ? { "last-event-id": lastId } : {}) },
  });

async function readAll(r: ReturnType<typeof sseReader>): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for (let m = await r.next(); m !== null; m = await r.next()) out.push(m);
  return out;
}

describe("a stream's buffer for a stalled reader", () => {
  it("ends the stream with an error event naming the last id sent once the reader leaves more than the buffer unread; resuming from it loses and repeats nothing", async () => {
    const sid = "gwbufferstall0001";
    await gateway.own(sid);
    await pub.publishEvent(stageEvent(sid, 1, 1500));
    const res = await open(sid);
    expect(res.status).toBe(200);
    const reader = sseReader(res);
    const first = await reader.next();
    expect(first).toMatchObject({ event: "stage" });
    // the reader stalls; 40 events of ~1.6 KB (about 4x the buffer) arrive live
    for (let v = 2; v <= 40; v++) await pub.publishEvent(stageEvent(sid, v, 1500));
    await pub.publishEvent(completeEvent(sid, 41));
    // the stream gave up on its reader: it no longer listens to the session
    for (let i = 0; i < 100 && gateway.hub.stats().listeners > 0; i++) await sleep(50);
    expect(gateway.hub.stats().listeners).toBe(0);
    const rest = await readAll(reader);
    const error = rest.at(-1);
    expect(error?.event).toBe("error");
    const body = JSON.parse(error?.data ?? "{}") as { code: string; reason: string; last_event_id: string };
    expect(body).toMatchObject({ code: "unavailable", reason: "buffer_full" });
    const sent = [first!, ...rest.slice(0, -1)];
    expect(sent.length).toBeLessThan(41);
    expect(body.last_event_id).toBe(sent.at(-1)?.id);
    // the client reconnects from the last id it received and gets exactly the rest
    const again = await readAll(sseReader(await open(sid, body.last_event_id)));
    const versions = [...sent, ...again].map((m) => (JSON.parse(m.data) as { version: number }).version);
    expect(versions).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    expect(again.at(-1)?.event).toBe("complete");
  });

  it("keeps a reader that keeps up, however much its session sends in all", async () => {
    const sid = "gwbufferkeepup001";
    await gateway.own(sid);
    const res = await open(sid);
    const reader = sseReader(res);
    const got: SseMessage[] = [];
    const reading = (async () => {
      for (let m = await reader.next(); m !== null; m = await reader.next()) got.push(m);
    })();
    await sleep(100);
    for (let v = 1; v <= 60; v++) {
      await pub.publishEvent(stageEvent(sid, v, 1500));
      if (v % 5 === 0) await sleep(20);
    }
    await pub.publishEvent(completeEvent(sid, 61));
    await reading;
    expect(got.map((m) => m.event)).toEqual([...Array.from({ length: 60 }, () => "stage"), "complete"]);
  });
});
