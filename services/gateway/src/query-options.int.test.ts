import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  SCHEMA_VERSION,
  SubmitRequest,
  WORKFLOW_OPTIONS,
  WorkflowName,
  naming as makeNaming,
  type Naming,
  type WorkflowOption,
} from "@agentmesh/contracts";
import { connectNats, createPublisher } from "@agentmesh/messaging";
import { createLocalSessionStore } from "@agentmesh/session-store/testing";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { apiKeyEntry, generateApiKey, parseApiKeys } from "./api-keys.js";
import { createGatewayApp, type GatewayDeps } from "./app.js";
import { createLocalLimits } from "./testing.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The query's contract end to end over a real NATS: a stand-in coordinator answers `submit` (and,
// for the OpenAI route, ends the session with a `complete` event), so what the gateway sent is
// what these tests read.

const KEY = generateApiKey();
const log = createLogger({ service: "test", level: "silent" });
let nc: NatsConnection;
let n: Naming;
let sub: Subscription;
const submits: SubmitRequest[] = [];

/** One valid value per workflow-specific option. */
const VALUE: Record<WorkflowOption, unknown> = {
  mode: "research",
  depth: "deep",
  scenario: "news",
  provider: "openai",
  model: "gpt-4o-mini",
  tier: "fast",
  image_attachments: [{ url: "https://example.org/a.png" }],
  capabilities: ["rag"],
  strategy_profile: "EXPLORATORY",
  retry_limit: 3,
};

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-query-options-test" });
  n = makeNaming(uniquePrefix("gwq"));
  await provisionTestStreams(nc, n);
  const pub = createPublisher(nc, n, log);
  sub = nc.subscribe(n.submit, {
    callback: (_err, m) => {
      const req = SubmitRequest.parse(m.json());
      submits.push(req);
      const sid = req.session_id ?? "sess-missing-0001";
      m.respond(
        JSON.stringify({ v: SCHEMA_VERSION, ok: true, session_id: sid, created: true, thread_id: req.thread_id }),
      );
      // a query that starts "(quiet)" is answered after a silence
      const quiet = typeof req.query === "string" && req.query.startsWith("(quiet)");
      void sleep(quiet ? 700 : 0).then(() =>
        pub.publishEvent({
          v: SCHEMA_VERSION,
          session_id: sid,
          version: 1,
          index: 0,
          timestamp: Date.now(),
          type: "complete",
          status: "completed",
          final_answer: `answered by ${req.workflow}`,
          final_reasoning_trace: "",
        }),
      );
    },
  });
});

afterAll(async () => {
  sub.unsubscribe();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

function gateway(over: Partial<GatewayDeps> = {}) {
  const store = createLocalSessionStore({
    keyPrefix: "gwq",
    activeTtlMs: 60_000,
    finishedTtlMs: 60_000,
    idempotencyTtlMs: 60_000,
  });
  const limits = createLocalLimits({
    keyPrefix: "gwq",
    rateLimit: 1000,
    rateWindowMs: 60_000,
    maxConcurrentSessions: 1000,
    sessionTtlMs: 60_000,
  });
  const { app } = createGatewayApp({
    nc,
    naming: n,
    store,
    limits,
    log,
    submitTimeoutMs: 5000,
    publisher: { publishInbox: async () => {} },
    keys: parseApiKeys({ inline: apiKeyEntry("alice", KEY) }),
    anonymous: false,
    defaultWorkflow: "supervisor",
    maxBodyBytes: 64 * 1024,
    ready: async () => true,
    ...over,
  });
  return (path: string, json: unknown) =>
    app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(json),
    });
}

/** Runs `fn` and returns the submits it caused. */
async function submitted(fn: () => Response | Promise<Response>): Promise<{ res: Response; sent: SubmitRequest[] }> {
  const before = submits.length;
  const res = await fn();
  return { res, sent: submits.slice(before) };
}

describe("POST /api/v1/query: the supervisor by default, each workflow's options only with it", () => {
  test("a query that names no workflow runs the supervisor (the configured default), with mode, depth and scenario", async () => {
    const post = gateway();
    const { res, sent } = await submitted(() =>
      post("/api/v1/query", {
        query: "What changed in JetStream?",
        mode: "research",
        depth: "quick",
        scenario: "news",
      }),
    );
    expect(res.status).toBe(202);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      workflow: "supervisor",
      options: { mode: "research", depth: "quick", scenario: "news" },
    });
  });

  test("the default comes from the gateway's configuration", async () => {
    const post = gateway({ defaultWorkflow: "halo" });
    const { sent } = await submitted(() => post("/api/v1/query", { query: "What is CRISPR?", capabilities: ["rag"] }));
    expect(sent[0]).toMatchObject({ workflow: "halo", options: { capabilities: ["rag"] } });
  });

  // every cell of the table: the option with its own workflow reaches the coordinator; with any other it is a 400
  const cells = (Object.entries(WORKFLOW_OPTIONS) as [WorkflowOption, WorkflowName][]).flatMap(([option, owner]) =>
    WorkflowName.options.map((workflow) => ({ option, owner, workflow })),
  );
  test.each(cells)("$option with $workflow", async ({ option, owner, workflow }) => {
    const post = gateway();
    const { res, sent } = await submitted(() =>
      post("/api/v1/query", { query: "What is CRISPR?", workflow, [option]: VALUE[option] }),
    );
    if (workflow === owner) {
      expect(res.status).toBe(202);
      expect(sent[0]?.options).toEqual({ [option]: VALUE[option] });
      return;
    }
    expect(res.status).toBe(400);
    expect(sent).toEqual([]);
    expect(await res.json()).toEqual({
      error: {
        code: "bad_request",
        status: 400,
        message: `the option "${option}" belongs to the ${owner} workflow; this query runs ${workflow}`,
      },
    });
  });

  test("an option of the supervisor sent without a workflow with another default is refused, naming the supervisor", async () => {
    const post = gateway({ defaultWorkflow: "critic-chain" });
    const { res, sent } = await submitted(() => post("/api/v1/query", { query: "What is CRISPR?", depth: "deep" }));
    expect(res.status).toBe(400);
    expect(sent).toEqual([]);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      'the option "depth" belongs to the supervisor workflow; this query runs critic-chain',
    );
  });
});

describe("POST /v1/chat/completions: the same options from `metadata`", () => {
  const ask = (metadata: Record<string, string>, model = "agentmesh/supervisor") =>
    gateway()("/v1/chat/completions", { model, messages: [{ role: "user", content: "What is CRISPR?" }], metadata });

  test("the table's keys are read as the option's type; other keys are the client's own and left alone", async () => {
    const { res, sent } = await submitted(() =>
      ask({
        mode: "research",
        depth: "deep",
        tier: "strong",
        image_attachments: "https://example.org/a.png, https://example.org/b.jpg",
        note: "mine",
      }),
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe(
      "answered by supervisor",
    );
    expect(sent[0]?.options).toEqual({
      mode: "research",
      depth: "deep",
      tier: "strong",
      image_attachments: [{ url: "https://example.org/a.png" }, { url: "https://example.org/b.jpg" }],
    });
    const halo = await submitted(() => ask({ capabilities: "rag, web" }, "agentmesh/halo"));
    expect(halo.sent[0]?.options).toEqual({ capabilities: ["rag", "web"] });
    const chain = await submitted(() => ask({ retry_limit: "2" }, "agentmesh/critic-chain"));
    expect(chain.sent[0]?.options).toEqual({ retry_limit: 2 });
    const board = await submitted(() => ask({ strategy_profile: "fallback" }, "agentmesh/blackboard"));
    expect(board.sent[0]?.options).toEqual({ strategy_profile: "FALLBACK" });
  });

  test("an option of another workflow is a 400 in OpenAI's error shape, naming the option and its workflow", async () => {
    const { res, sent } = await submitted(() => ask({ retry_limit: "2" }));
    expect(res.status).toBe(400);
    expect(sent).toEqual([]);
    expect(await res.json()).toEqual({
      error: {
        type: "invalid_request_error",
        code: "bad_request",
        param: null,
        message: 'metadata: the option "retry_limit" belongs to the critic-chain workflow; this query runs supervisor',
      },
    });
  });

  test("a value the option does not take is a 400 naming the option", async () => {
    for (const [key, value] of [
      ["depth", "bottomless"],
      ["tier", "turbo"],
      ["image_attachments", "file:///etc/passwd"],
    ] as const) {
      const { res, sent } = await submitted(() => ask({ [key]: value }));
      expect(res.status, key).toBe(400);
      expect(sent).toEqual([]);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
        new RegExp(`^metadata: .* at ${key}`),
      );
    }
    const chain = await submitted(() => ask({ retry_limit: "many" }, "agentmesh/critic-chain"));
    expect(chain.res.status).toBe(400);
    expect(((await chain.res.json()) as { error: { message: string } }).error.message).toMatch(
      /^metadata: .* at retry_limit/,
    );
  });
});

describe("a /v1 stream through a silence", () => {
  test("keep-alive comments while the workflow is silent, and headers that keep proxies from buffering or transforming it", async () => {
    const post = gateway({ pingMs: 100 });
    const res = await post("/v1/chat/completions", {
      model: "agentmesh/supervisor",
      messages: [{ role: "user", content: "(quiet) What changed?" }],
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    const text = await res.text();
    const lines = text.split("\n").filter((l) => l !== "");
    const firstAnswer = lines.findIndex((l) => l.includes("answered by supervisor"));
    const pings = lines.slice(0, firstAnswer).filter((l) => l === ": keep-alive");
    expect(pings.length).toBeGreaterThanOrEqual(3);
    expect(lines.at(-1)).toBe("data: [DONE]");
  });
});
