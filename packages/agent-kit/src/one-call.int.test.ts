import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  InboxInput,
  naming as makeNaming,
  RoutingResult,
  SCHEMA_VERSION,
  taskId,
  type Naming,
  type RouteRequest,
} from "@agentmesh/contracts";
import { createOpenAIModel } from "@agentmesh/llm";
import { startScriptedOpenAIServer, type HttpScriptEntry } from "@agentmesh/llm/testing";
import { connectNats, createPublisher, provision } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { startAgent } from "./agent.js";
import { defineAgent } from "./definition.js";

// A one-call op run by startAgent over NATS against a scripted OpenAI-compatible server: every
// kind of model failure costs one request and one delivery, and reaches the inbox as a failure
// the workflow falls back on. The consumer allows 3 deliveries and the adapter 5 requests.

const log = createLogger({ service: "test", level: "silent" });
let nc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "agent-kit-one-call" });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nc.drain();
});

async function freshNaming(): Promise<Naming> {
  const naming = makeNaming(uniquePrefix("one"));
  await provision(nc, {
    naming,
    roles: ["router"],
    taskAckWaitMs: 3000,
    taskMaxDeliver: 3,
    inboxAckWaitMs: 1000,
    inboxMaxDeliver: 3,
    eventsMaxAgeMs: 60_000,
    duplicateWindowMs: 10_000,
    maxAckPendingPerRole: 4,
  });
  cleanups.push(async () => {
    const jsm = await jetstreamManager(nc);
    for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
      await jsm.streams.delete(s).catch(() => false);
  });
  return naming;
}

/** The router's op as its role defines it: one json_object call, marked one-call. */
const routerLike = (oneCall: boolean) =>
  defineAgent({
    role: "router",
    description: "test",
    ops: {
      route: {
        kind: "handler",
        oneCall,
        version: "route/1",
        run: (input: RouteRequest, ctx) =>
          ctx.complete({ schema: RoutingResult, schemaName: "r", prompt: input.query, mode: "json_object" }),
        summarize: (o) => o.agent,
      },
    },
  });

const FAILURES: ReadonlyArray<[string, Omit<HttpScriptEntry, "role" | "op">]> = [
  ["429", { status: 429, retryAfterSec: 0 }],
  ["500", { status: 500 }],
  ["a hang", { output: {}, delayMs: 30_000 }],
  ["garbage", { content: "not json" }],
];

async function runOnce(failure: Omit<HttpScriptEntry, "role" | "op">, oneCall: boolean) {
  const naming = await freshNaming();
  const again = Array.from({ length: 20 }, () => ({ role: "router", op: "route", status: 500 }));
  const server = await startScriptedOpenAIServer({
    script: [{ role: "router", op: "route", ...failure }, ...again],
    host: "127.0.0.1",
  });
  cleanups.push(() => server.close());
  const model = createOpenAIModel({
    baseURL: server.url,
    timeoutMs: 2000,
    maxHttpAttempts: 5,
    backoff: { baseMs: 1, capMs: 2 },
    roles: {},
    defaultRole: { model: "m", temperature: 0, tier: "fast" },
  });
  const agent = await startAgent(routerLike(oneCall), {
    nc,
    naming,
    model,
    log,
    concurrency: 1,
    ackWaitMs: 3000,
    maxDeliver: 3,
  });
  cleanups.push(() => agent.stop(500));
  const sid = `sess${randomBytes(6).toString("hex")}`;
  const results: InboxInput[] = [];
  const sub = nc.subscribe(naming.inbox(sid, "router"), {
    callback: (_e, m) => void results.push(InboxInput.parse(m.json())),
  });
  cleanups.push(async () => sub.unsubscribe());
  await nc.flush();
  await createPublisher(nc, naming, log, { client: true }).publishTask({
    v: SCHEMA_VERSION,
    task_id: taskId(sid, 1, 0, 0),
    session_id: sid,
    role: "router",
    op: "route",
    attempt: 0,
    deadline_at: Date.now() + 60_000,
    input: { query: "Chart this CSV", messages: [] },
  });
  for (const end = Date.now() + 20_000; results.length === 0;) {
    if (Date.now() > end) throw new Error("no result reached the inbox");
    await new Promise((r) => setTimeout(r, 20));
  }
  // room for a redelivery (the worker's first nak waits about 500 ms) to show up, were there one
  await new Promise((r) => setTimeout(r, 1500));
  return { results, requests: server.calls.length, redelivered: agent.worker.stats.redelivered };
}

describe("a one-call op over NATS: one request, one delivery, then the fallback", () => {
  it.each(FAILURES)(
    "%s: one model request, no redelivery, a failure not retryable in the inbox",
    async (_what, failure) => {
      const { results, requests, redelivered } = await runOnce(failure, true);
      expect(requests).toBe(1);
      expect(redelivered).toBe(0);
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ kind: "result", outcome: { ok: false, error: { retryable: false } } });
    },
  );

  it("the same op without the mark retries a 500 in the adapter and again on redelivery", async () => {
    const { requests, redelivered } = await runOnce({ status: 500 }, false);
    expect(requests).toBeGreaterThan(5);
    expect(redelivered).toBeGreaterThan(0);
  });
});
