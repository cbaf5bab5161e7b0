import type { Naming } from "@agentmesh/contracts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { connect as tcpConnect, createServer, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  cancelledChecker,
  markCancelled,
  sharedCancelledView,
  watchCancelled,
  type CancelledView,
} from "./cancelled.js";
import { connectNats } from "./connect.js";
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

/** A loopback TCP relay to the NATS server that a test can cut (every connection dropped, new ones refused) and resume. */
async function tcpProxy(target: URL): Promise<{ url: string; cut(): void; resume(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let open = true;
  const server = createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = tcpConnect(Number(target.port), target.hostname);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", end).on("close", end);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `nats://127.0.0.1:${port}`,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    resume() {
      open = true;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
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

  it(
    "after a disconnect, is not ready until it has the marks stored while it was away",
    { timeout: 60_000 },
    async () => {
      const naming = await setup();
      const link = await tcpProxy(new URL(inject("natsUrl")));
      cleanups.push(() => link.close());
      const own = await connectNats({ url: link.url, name: "messaging-cancelled-away" });
      cleanups.push(() => own.close());
      const errors: unknown[] = [];
      const view = watchCancelled(own, naming, (err) => errors.push(err));
      cleanups.push(() => view.stop());
      await waitFor(() => view.ready, 5000, "ready");
      // the link goes down; marks are stored (their broadcasts would be lost) while it is away
      link.cut();
      await waitFor(() => !view.ready, 5000, "not ready once the link is down");
      const away = Array.from({ length: 50 }, () => sessionId());
      await Promise.all(away.map((sid) => markCancelled(nc, naming, sid, "while away")));
      let readyWithout = 0;
      let sampling = true;
      // looked at on every turn of the event loop: never ready without every mark stored while away
      const sample = (): void => {
        if (view.ready && away.some((sid) => !view.has(sid))) readyWithout++;
        if (sampling) setImmediate(sample);
      };
      sample();
      link.resume();
      await waitFor(() => view.ready, 30_000, "ready again after the reconnect");
      sampling = false;
      expect(readyWithout).toBe(0);
      expect(away.filter((sid) => !view.has(sid))).toEqual([]);
      expect(errors).toEqual([]);
    },
  );

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

describe("sharedCancelledView", () => {
  it("gives every worker of a connection one watch, stopped when the last one lets go", async () => {
    const naming = await setup();
    const a = sharedCancelledView(nc, naming, () => undefined);
    const b = sharedCancelledView(nc, naming, () => undefined);
    expect(b.view).toBe(a.view);
    await waitFor(() => a.view.ready, 5000, "ready");
    a.release();
    a.release(); // twice is once
    expect(b.view.ready).toBe(true);
    b.release();
    expect(b.view.ready).toBe(false);
    const c = sharedCancelledView(nc, naming, () => undefined);
    cleanups.push(() => c.release());
    expect(c.view).not.toBe(a.view);
    await waitFor(() => c.view.ready, 5000, "a new watch ready");
  });
});
