import { HEADERS, inputIds, SCHEMA_VERSION, type InboxInput, type Naming } from "@agentmesh/contracts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { listDeadLetters, redriveDeadLetter } from "./dead-letters.js";
import { startInboxConsumer } from "./inbox-consumer.js";
import { createPublisher } from "./publisher.js";
import { connectTest, dropStreams, freshNaming, recordingLog, sessionId, sleep, waitFor } from "./test-support.js";
import type { InboxHandler } from "./types.js";

let nc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  nc = await connectTest("messaging-inbox-test");
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nc.drain();
});

async function setup(handler: InboxHandler, crash?: (p: string) => void) {
  const { naming } = await freshNaming(nc);
  cleanups.push(() => dropStreams(nc, naming));
  const log = recordingLog();
  const consumer = await startInboxConsumer(nc, {
    naming,
    concurrency: 4,
    ackWaitMs: 1000,
    handler,
    log,
    ...(crash ? { crash } : {}),
  });
  cleanups.push(() => consumer.stop(500));
  return { naming, consumer, log, publisher: createPublisher(nc, naming, recordingLog()) };
}

const cancel = (sid: string, id = "c1"): InboxInput => ({
  v: SCHEMA_VERSION,
  kind: "cancel",
  session_id: sid,
  input_id: inputIds.cancel(id),
  reason: "test",
});

async function inboxLeft(naming: Naming): Promise<number> {
  return (await (await jetstreamManager(nc)).streams.info(naming.streams.inbox)).state.messages;
}

describe("startInboxConsumer", () => {
  it("hands valid inputs to the handler and acks on 'ack' after the before-ack crash point", async () => {
    const got: InboxInput[] = [];
    const points: string[] = [];
    const { naming, consumer, publisher } = await setup(
      async (input) => {
        got.push(input);
        points.push("handler");
        return "ack";
      },
      (p) => points.push(p),
    );
    const sid = sessionId();
    await publisher.publishInbox(cancel(sid));
    await waitFor(() => consumer.stats.processed === 1, 10_000, "processed");
    expect(got).toEqual([cancel(sid)]);
    expect(points).toEqual(["handler", "before-ack"]);
    await waitFor(async () => (await inboxLeft(naming)) === 0, 5000, "acked input removed");
    expect(consumer.alive()).toBe(true);
  });

  it("naks 'retry' and a throwing handler with a short delay, then the input comes back", async () => {
    const deliveries: number[] = [];
    const { consumer, publisher } = await setup(async (_input, ctx) => {
      deliveries.push(ctx.deliveryCount);
      if (ctx.deliveryCount === 1) return "retry";
      if (ctx.deliveryCount === 2) throw new Error("redis went away");
      return "ack";
    });
    await publisher.publishInbox(cancel(sessionId()));
    await waitFor(() => consumer.stats.processed === 1, 10_000, "third delivery acked");
    expect(deliveries).toEqual([1, 2, 3]);
    expect(consumer.stats).toMatchObject({ processed: 1, failed: 1, redelivered: 2, dropped: 0 });
  });

  it("dead-letters malformed, oversized, wrong-version and misrouted inputs once, never dropping them silently", async () => {
    let calls = 0;
    const { naming, consumer } = await setup(async () => {
      calls++;
      return "ack";
    });
    const js = jetstream(nc);
    const sid = sessionId();
    await js.publish(naming.inbox(sid, "client"), "]]");
    await js.publish(naming.inbox(sid, "client"), JSON.stringify({ ...cancel(sid), reason: "x".repeat(300 * 1024) }));
    await js.publish(naming.inbox(sid, "client"), JSON.stringify({ ...cancel(sid), v: 0 }));
    await js.publish(naming.inbox(sid, "client"), JSON.stringify(cancel(sessionId())));
    await waitFor(() => consumer.stats.dropped === 4, 10_000, "four drops");
    await sleep(1500);
    expect(consumer.stats.dropped).toBe(4);
    expect(consumer.stats.redelivered).toBe(0);
    expect(calls).toBe(0);
    expect(await inboxLeft(naming)).toBe(0);
    expect(consumer.alive()).toBe(true);
    const dead = await listDeadLetters(nc, naming);
    expect(dead).toHaveLength(4);
    expect(dead.every((d) => d.kind === "inbox" && d.subject === naming.deadLetter("inbox") && d.reason !== null)).toBe(
      true,
    );
    // the misrouted one names another session in its body; the unparsable one names none
    expect(dead.filter((d) => d.sessionId === sid)).toHaveLength(2);
    expect(dead.filter((d) => d.sessionId === null)).toHaveLength(1);
  });

  it("an input whose handler fails on every delivery goes to <p>.dead.inbox with its session id, and can be re-driven", async () => {
    let fail = true;
    const deliveries: number[] = [];
    const { naming, consumer, publisher, log } = await setup(async (_input, ctx) => {
      deliveries.push(ctx.deliveryCount);
      if (!fail) return "ack";
      if (ctx.deliveryCount % 2 === 0) throw new Error("redis went away");
      return "retry";
    });
    const sid = sessionId();
    await publisher.publishInbox(cancel(sid, "lost"));
    await waitFor(async () => (await listDeadLetters(nc, naming)).length === 1, 15_000, "input dead-lettered");
    expect(deliveries).toEqual([1, 2, 3, 4, 5]); // freshNaming: inboxMaxDeliver 5
    expect(await inboxLeft(naming)).toBe(0);
    const [dead] = await listDeadLetters(nc, naming);
    expect(dead).toMatchObject({
      kind: "inbox",
      subject: naming.deadLetter("inbox"),
      originalSubject: naming.inbox(sid, "coordinator"),
      sessionId: sid,
      deliveries: 5,
    });
    expect(dead?.reason).toMatch(/not applied after 5 deliveries/);
    const stored = await (await jetstreamManager(nc)).streams.getMessage(naming.streams.dead, { seq: dead!.seq });
    expect(stored?.header.get(HEADERS.sessionId)).toBe(sid);
    expect(log.messages("error")).toContain(
      "inbox input dead-lettered: the session may be stuck until it is re-driven",
    );

    fail = false;
    await redriveDeadLetter(nc, naming, dead!.seq);
    await waitFor(() => consumer.stats.processed === 1, 10_000, "re-driven input applied");
    expect(await listDeadLetters(nc, naming)).toEqual([]);
  });

  it("drops an input whose subject's sender may not write it (forged result, start, cancel) and applies the real one", async () => {
    const got: InboxInput[] = [];
    const { naming, consumer, publisher, log } = await setup(async (input) => {
      got.push(input);
      return "ack";
    });
    const js = jetstream(nc);
    const sid = sessionId();
    const result = (role: string): InboxInput => ({
      v: SCHEMA_VERSION,
      kind: "result",
      session_id: sid,
      input_id: inputIds.result(`${sid}.1.0.0`),
      task_id: `${sid}.1.0.0`,
      role,
      op: "plan",
      outcome: {
        ok: false,
        error: { code: "internal", message: `from ${role}`, retryable: false, component: role },
        provenance: null,
      },
    });
    // a critic forging the planner's result on its own subject; a critic's result on the planner's subject
    await js.publish(naming.inbox(sid, "critic"), JSON.stringify(result("planner")));
    await js.publish(naming.inbox(sid, "planner"), JSON.stringify(result("critic")));
    // a role or a client forging coordinator-only inputs, a role forging a client's cancel
    const start: InboxInput = {
      v: SCHEMA_VERSION,
      kind: "start",
      session_id: sid,
      input_id: inputIds.start(sid),
      workflow: "critic-chain",
      query: "what is 2 + 2?",
      options: {},
    };
    await js.publish(naming.inbox(sid, "client"), JSON.stringify(start));
    await js.publish(naming.inbox(sid, "planner"), JSON.stringify(start));
    await js.publish(naming.inbox(sid, "executor"), JSON.stringify(cancel(sid)));
    await waitFor(() => consumer.stats.forged === 5, 10_000, "five forged inputs dropped");
    expect(
      log.lines.filter(
        (l) =>
          l.level === "warn" &&
          /arrived on the inbox subject of sender/.test(String((l.o as { reason?: string }).reason)),
      ),
    ).toHaveLength(5);
    expect(consumer.stats.dropped).toBe(5);
    expect(got).toEqual([]);
    // the real result, published by the planner's worker path, applies
    await publisher.publishInbox(result("planner"));
    await waitFor(() => consumer.stats.processed === 1, 10_000, "real result processed");
    expect(got).toEqual([result("planner")]);
    expect(consumer.stats.forged).toBe(5);
  });

  it("heartbeats while a slow handler runs, so the input is delivered once", async () => {
    const deliveries: number[] = [];
    const { consumer, publisher } = await setup(async (_i, ctx) => {
      deliveries.push(ctx.deliveryCount);
      await sleep(2500);
      return "ack";
    });
    await publisher.publishInbox(cancel(sessionId()));
    await waitFor(() => consumer.stats.processed === 1, 10_000, "slow input acked");
    await sleep(1200);
    expect(deliveries).toEqual([1]);
  });
});
