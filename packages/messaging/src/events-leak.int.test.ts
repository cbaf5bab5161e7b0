import { SCHEMA_VERSION, type Naming, type SessionEvent } from "@agentmesh/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { followEvents } from "./events.js";
import { createPublisher } from "./publisher.js";
import { connectTest, dropStreams, freshNaming, recordingLog, sessionId, sleep, waitFor } from "./test-support.js";

// Followers that leave must not leave their consumers on the events stream: each case is one way
// a follower leaves, counted on the server (not in the client) after the followers are gone.

let nc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  nc = await connectTest("messaging-events-leak-test");
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});
afterAll(async () => {
  await nc.drain();
});

const event = (sid: string, index: number, type: "stage" | "complete" = "stage"): SessionEvent =>
  type === "complete"
    ? {
        v: SCHEMA_VERSION,
        session_id: sid,
        version: 1,
        index,
        timestamp: 1_700_000_000_000,
        type: "complete",
        status: "completed",
        final_answer: "done",
        final_reasoning_trace: "",
      }
    : {
        v: SCHEMA_VERSION,
        session_id: sid,
        version: 1,
        index,
        timestamp: 1_700_000_000_000,
        type: "stage",
        name: "planner",
        status: "running",
        description: `event ${index}`,
      };

/** A prefix with one finished session on its events stream. */
async function finishedSession(): Promise<{ naming: Naming; sid: string }> {
  const { naming } = await freshNaming(nc);
  cleanups.push(() => dropStreams(nc, naming));
  const publisher = createPublisher(nc, naming, recordingLog());
  const sid = sessionId();
  for (let i = 0; i < 3; i++) await publisher.publishEvent(event(sid, i));
  await publisher.publishEvent(event(sid, 3, "complete"));
  return { naming, sid };
}

async function consumersOnEvents(naming: Naming): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.consumers.list(naming.streams.events).next()).length;
}

/** Reads every event it is given until the iteration ends, as a stream's reader does. */
async function drain(events: AsyncIterable<SessionEvent>, got: SessionEvent[] = []): Promise<SessionEvent[]> {
  for await (const e of events) got.push(e);
  return got;
}

const FOLLOWERS = 12;

describe("followEvents leaves no consumer behind", () => {
  it("when its signal aborts while the consumer is being created: the iteration ends and the consumer is deleted", async () => {
    const { naming, sid } = await finishedSession();
    const ended: boolean[] = [];
    const runs = Array.from({ length: FOLLOWERS }, (_, i) => {
      const ac = new AbortController();
      const run = drain(followEvents(nc, naming, sid, { signal: ac.signal })).then(() => (ended[i] = true));
      // aborted once its set-up is under way: the first request to the server is out, none answered
      ac.abort();
      return run;
    });
    await Promise.race([Promise.all(runs), sleep(5000)]);
    expect(ended.filter(Boolean)).toHaveLength(FOLLOWERS);
    await waitFor(async () => (await consumersOnEvents(naming)) === 0, 3000, "no consumer on the events stream").catch(
      () => {},
    );
    expect(await consumersOnEvents(naming)).toBe(0);
  });

  it("when its signal aborts after the first event: the server's consumer is deleted, not left to lapse", async () => {
    const { naming, sid } = await finishedSession();
    // a running session (no complete yet), so only the abort ends these followers
    const running = sessionId();
    await createPublisher(nc, naming, recordingLog()).publishEvent(event(running, 0));
    await Promise.all(
      Array.from({ length: FOLLOWERS }, async (_, i) => {
        const ac = new AbortController();
        const got: SessionEvent[] = [];
        const events = followEvents(nc, naming, i % 2 === 0 ? running : sid, { signal: ac.signal });
        const run = drain(events, got);
        await waitFor(() => got.length > 0, 5000, "the first event");
        ac.abort();
        await run;
      }),
    );
    await waitFor(async () => (await consumersOnEvents(naming)) === 0, 3000, "no consumer on the events stream").catch(
      () => {},
    );
    expect(await consumersOnEvents(naming)).toBe(0);
  });

  it("when its caller stops iterating after the first event: the consumer is deleted", async () => {
    const { naming, sid } = await finishedSession();
    for (let i = 0; i < FOLLOWERS; i++) {
      for await (const e of followEvents(nc, naming, sid)) {
        expect(e.index).toBe(0);
        break;
      }
    }
    expect(await consumersOnEvents(naming)).toBe(0);
  });
});
