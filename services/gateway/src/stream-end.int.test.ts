import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SCHEMA_VERSION, naming as makeNaming, type SessionEvent } from "@agentmesh/contracts";
import { connectNats, createPublisher, provision } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { createEventHub, type EventHub } from "./fanout.js";
import { sessionStream, type EventCursor } from "./stream.js";

const naming = makeNaming(uniquePrefix("gws"));
const SID = "gwstream000000000001";
let nc: NatsConnection;
let hub: EventHub;

/** A finished session's events as a coordinator publishes them: a stage at version 1, then `complete` at version 2. */
const EVENTS: SessionEvent[] = [
  {
    v: SCHEMA_VERSION,
    session_id: SID,
    version: 1,
    index: 0,
    timestamp: 1,
    type: "stage",
    name: "planner",
    description: "Plans",
    status: "running",
  },
  {
    v: SCHEMA_VERSION,
    session_id: SID,
    version: 1,
    index: 1,
    timestamp: 2,
    type: "stage",
    name: "planner",
    description: "Plans",
    status: "completed",
  },
  {
    v: SCHEMA_VERSION,
    session_id: SID,
    version: 2,
    index: 0,
    timestamp: 3,
    type: "complete",
    status: "completed",
    final_answer: "42",
    final_reasoning_trace: "computed",
  },
];

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-stream-test" });
  await provision(nc, {
    naming,
    roles: ["planner"],
    taskAckWaitMs: 1000,
    taskMaxDeliver: 3,
    inboxAckWaitMs: 1000,
    inboxMaxDeliver: 5,
    eventsMaxAgeMs: 60_000,
    duplicateWindowMs: 10_000,
    maxAckPendingPerRole: 16,
  });
  const publisher = createPublisher(nc, naming, createLogger({ service: "test", level: "silent" }));
  for (const e of EVENTS) await publisher.publishEvent(e);
  hub = createEventHub(nc, naming);
});

afterAll(async () => {
  await hub.stop();
  const jsm = await jetstreamManager(nc);
  for (const s of Object.values(naming.streams)) await jsm.streams.delete(s).catch(() => false);
  await nc.close();
});

/** Everything the stream yields after `after`, failing when it has not ended within 5 s. */
async function streamed(after: EventCursor | null): Promise<SessionEvent[]> {
  const signal = AbortSignal.timeout(5000);
  const out: SessionEvent[] = [];
  for await (const item of sessionStream(hub, SID, { after, tokens: false, signal }))
    if (item.kind === "event") out.push(item.event);
  if (signal.aborted) throw new Error(`the stream did not end by itself; it yielded ${out.length} events`);
  return out;
}

describe("sessionStream of a finished session", () => {
  it("yields exactly the events after the cursor and ends with `complete`", async () => {
    expect(await streamed(null)).toEqual(EVENTS);
    expect(await streamed({ version: 1, index: 0 })).toEqual(EVENTS.slice(1));
  });

  it("ends at once when the client already has `complete` (or claims to be past it), rather than waiting forever", async () => {
    expect(await streamed({ version: 2, index: 0 })).toEqual([]);
    expect(await streamed({ version: 9, index: 0 })).toEqual([]);
  });
});
