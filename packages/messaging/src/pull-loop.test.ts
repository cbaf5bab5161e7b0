import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { startPullLoop } from "./pull-loop.js";
import { recordingLog, waitFor } from "./test-support.js";

/**
 * A pull that yields `msgs` and then stays open until stopped (a pull whose end never comes),
 * or ends at once after them when `ends`.
 */
function pull(msgs: JsMsg[], ends: boolean): ConsumerMessages & { stopped: boolean } {
  let release: () => void = () => undefined;
  const stopped = new Promise<void>((r) => (release = r));
  const out = {
    stopped: false,
    stop() {
      out.stopped = true;
      release();
    },
    async *[Symbol.asyncIterator]() {
      for (const m of msgs) yield m;
      if (!ends) await stopped;
    },
    status: () => ({
      // no status ever comes: the iteration ends when the pull is stopped
      [Symbol.asyncIterator]: () => ({ next: () => stopped.then(() => ({ done: true as const, value: undefined })) }),
    }),
  };
  return out as unknown as ConsumerMessages & { stopped: boolean };
}

/** A consumer whose pulls are `pulls` in order, then empty ones that end (each a little later, as a server's expiry would). */
function consumerOf(pulls: ConsumerMessages[]): Consumer & { fetches: number } {
  const c = {
    fetches: 0,
    fetch: () => new Promise<ConsumerMessages>((r) => setTimeout(() => r(pulls[c.fetches++] ?? pull([], true)), 10)),
  };
  return c as unknown as Consumer & { fetches: number };
}

const msg = (seq: number) => ({ seq, working: () => undefined, nak: () => undefined }) as unknown as JsMsg;

const DEADLINE_WARNING = "a pull outlived its expiry; pulling again";

/** A loop of one slot over `consumer` with a 200 ms pull deadline, recording the messages it handles. */
function loopOver(consumer: Consumer, handleMs = 0) {
  const handled: number[] = [];
  const log = recordingLog();
  const loop = startPullLoop({
    nc: { isClosed: () => false } as unknown as NatsConnection,
    consumer,
    concurrency: 1,
    heartbeatMs: 1000,
    log,
    what: { stream: "S", consumer: "C" },
    pullDeadlineMs: 200,
    handle: (e) => {
      handled.push(e.msg.seq);
      e.settled = true;
      return new Promise((r) => setTimeout(r, handleMs));
    },
  });
  return { loop, handled, log };
}

describe("the pull loop", () => {
  it("ends a pull that outlives its deadline and pulls again, so a message behind it is still worked", async () => {
    const pulls = [pull([], false), pull([msg(7)], true)];
    const { loop, handled, log } = loopOver(consumerOf(pulls));
    try {
      await waitFor(() => handled.includes(7), 5000, "the message of the second pull");
      expect(pulls[0]!.stopped).toBe(true);
      expect(log.messages("warn")).toContain(DEADLINE_WARNING);
    } finally {
      await loop.stop(100);
    }
  });

  it("leaves a pull that ends in time alone: no deadline warning", async () => {
    const consumer = consumerOf([pull([msg(1)], true)]);
    const { loop, handled, log } = loopOver(consumer, 20);
    try {
      await waitFor(() => consumer.fetches > 3, 5000, "several pulls");
      await new Promise((r) => setTimeout(r, 300));
      expect(handled).toEqual([1]);
      expect(log.messages("warn")).not.toContain(DEADLINE_WARNING);
    } finally {
      await loop.stop(100);
    }
  });
});
