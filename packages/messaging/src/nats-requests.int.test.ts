// Guards patches/@nats-io__nats-core@3.4.0.patch: nats.js 3.4.0 built a RequestError (and captured
// its stack) in `RequestOne.cancel()` after every *answered* request, to reject a promise that was
// already resolved. Every JetStream publish is such a request, three per agent step, so the patch
// skips it once the request is settled. These tests count RequestError constructions through the
// class request.js reads at call time, and check that failing requests still fail as before (and
// that the count does see them). The zero counts rely on `connectNats` turning async traces off
// (`noAsyncTraces`): with them on, nats.js builds an error per request on purpose, for its stack.
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublisher } from "./publisher.js";
import { connectTest, dropStreams, freshNaming, makeTask, recordingLog, sessionId } from "./test-support.js";
import type { Naming } from "@agentmesh/contracts";

const require = createRequire(import.meta.url);
// the nats-core the transport loads (its package exports hide lib/errors.js, so by file)
const transportMain = realpathSync(require.resolve("@nats-io/transport-node"));
const coreLib = join(transportMain.slice(0, transportMain.lastIndexOf("/transport-node/")), "nats-core", "lib");
const errors = createRequire(join(coreLib, "mod.js"))(join(coreLib, "errors.js")) as {
  RequestError: new (...a: unknown[]) => Error;
};

let nc: NatsConnection;
let naming: Naming;
const original = errors.RequestError;
let built = 0;

beforeAll(async () => {
  nc = await connectTest("nats-requests");
  ({ naming } = await freshNaming(nc));
  errors.RequestError = class CountedRequestError extends original {
    constructor(...a: unknown[]) {
      super(...a);
      built++;
    }
    // jetstream checks `err instanceof RequestError` against this live export: errors built from
    // the original class (no responders, a closed connection) must still pass while it is swapped
    static override [Symbol.hasInstance](x: unknown): boolean {
      return x instanceof original;
    }
  };
});

afterAll(async () => {
  errors.RequestError = original;
  await dropStreams(nc, naming);
  await nc.close();
});

describe("nats.js requests (patched nats-core)", () => {
  it("an answered request builds no RequestError", async () => {
    const subject = `${naming.prefix}.echo`;
    const sub = nc.subscribe(subject, { callback: (_e, m) => void m.respond(m.data) });
    built = 0;
    for (let i = 0; i < 50; i++)
      expect(new TextDecoder().decode((await nc.request(subject, `ping ${i}`, { timeout: 2000 })).data)).toBe(
        `ping ${i}`,
      );
    sub.unsubscribe();
    expect(built).toBe(0);
  });

  it("a JetStream publish (a request for its ack) builds no RequestError", async () => {
    const publisher = createPublisher(nc, naming, recordingLog());
    built = 0;
    for (let i = 0; i < 20; i++) await publisher.publishTask(makeTask(sessionId(), { role: "planner" }));
    expect(built).toBe(0);
  });

  it("a request nobody answers still fails, no responders and a timeout, and the count sees its RequestError", async () => {
    built = 0;
    await expect(nc.request(`${naming.prefix}.nobody`, "x", { timeout: 500 })).rejects.toThrow(/no responders/i);
    const subject = `${naming.prefix}.silent`;
    const sub = nc.subscribe(subject, { callback: () => {} });
    await nc.flush();
    await expect(nc.request(subject, "x", { timeout: 200 })).rejects.toThrow(/timeout/i);
    sub.unsubscribe();
    // the timed-out request is cancelled unsettled, with a RequestError built through the swapped
    // class: proof that the zeros above were counted where request.js builds them
    expect(built).toBeGreaterThan(0);
  });
});
