import type { Naming } from "@agentmesh/contracts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { cancelledChecker, markCancelled, watchCancelled, type CancelledView } from "./cancelled.js";
import { connectTest, dropStreams, freshNaming, sessionId, waitFor } from "./test-support.js";

let nc: NatsConnection;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  nc = await connectTest("messaging-cancelled-test");
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nc.drain();
});

async function setup(): Promise<Naming> {
  const { naming } = await freshNaming(nc);
  cleanups.push(() => dropStreams(nc, naming));
  return naming;
}

function watch(naming: Naming, now?: () => number): { view: CancelledView; errors: unknown[] } {
  const errors: unknown[] = [];
  const view = watchCancelled(nc, naming, (err) => errors.push(err), now);
  cleanups.push(() => view.stop());
  return { view, errors };
}

/** A KV delete of the session's mark, as `nats kv del` writes it. */
async function unmark(naming: Naming, sid: string): Promise<void> {
  const h = headers();
  h.set("KV-Operation", "DEL");
  await jetstream(nc).publish(`$KV.${naming.kv.cancelled}.${sid}`, new Uint8Array(), { headers: h });
}

describe("watchCancelled", () => {
  it("is ready at once on an empty bucket and then follows marks and deletes as they are stored", async () => {
    const naming = await setup();
    const { view, errors } = watch(naming);
    await waitFor(() => view.ready, 5000, "ready");
    const sid = sessionId();
    expect(view.has(sid)).toBe(false);
    await markCancelled(nc, naming, sid, "user asked");
    await waitFor(() => view.has(sid), 5000, "the mark");
    await unmark(naming, sid);
    await waitFor(() => !view.has(sid), 5000, "the delete");
    expect(await cancelledChecker(nc, naming)(sid)).toBe(false);
    expect(errors).toEqual([]);
  });

  it("is not ready before it has every mark stored when it began", async () => {
    const naming = await setup();
    const marked = Array.from({ length: 200 }, () => sessionId());
    await Promise.all(marked.map((sid) => markCancelled(nc, naming, sid, "budget")));
    const spared = sessionId();
    await markCancelled(nc, naming, spared, "then un-cancelled");
    await unmark(naming, spared);
    const { view } = watch(naming);
    // Looked at on every turn of the event loop: the first time it says ready, every mark is there.
    const until = Date.now() + 10_000;
    while (!view.ready && Date.now() < until) await new Promise((r) => setImmediate(r));
    expect(view.ready).toBe(true);
    expect(marked.filter((sid) => !view.has(sid))).toEqual([]);
    expect(view.has(spared)).toBe(false);
  });

  it("forgets a mark older than the bucket's max age, as the bucket does", async () => {
    const naming = await setup();
    const sid = sessionId();
    await markCancelled(nc, naming, sid, "old");
    let skew = 0;
    const { view } = watch(naming, () => Date.now() + skew);
    await waitFor(() => view.ready && view.has(sid), 5000, "the mark");
    const info = await (await jetstreamManager(nc)).streams.info(`KV_${naming.kv.cancelled}`);
    skew = Math.floor(info.config.max_age / 1_000_000) + 1000;
    expect(view.has(sid)).toBe(false);
  });

  it("takes a mark from add() before the watch delivers it, and is not ready after stop()", async () => {
    const naming = await setup();
    const { view } = watch(naming);
    const sid = sessionId();
    view.add(sid);
    expect(view.has(sid)).toBe(true);
    await waitFor(() => view.ready, 5000, "ready");
    view.stop();
    expect(view.ready).toBe(false);
  });

  it("reports a bucket it cannot watch and stays not ready", async () => {
    const naming = await setup();
    const { view, errors } = watch({ ...naming, kv: { ...naming.kv, cancelled: `${naming.kv.cancelled}_missing` } });
    await waitFor(() => errors.length > 0, 5000, "the error");
    expect(view.ready).toBe(false);
  });
});
