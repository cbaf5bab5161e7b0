import { describe, expect, test } from "vitest";
import {
  LIMITS,
  SCHEMA_VERSION,
  naming,
  type Attachment,
  type InboxInput,
  type SessionState,
  type SubmitRequest,
} from "@agentmesh/contracts";
import { createLocalSessionStore, testSessionState } from "@agentmesh/session-store/testing";
import { createLogger } from "@agentmesh/service-kit";
import type { NatsConnection } from "@nats-io/transport-node";
import { apiKeyEntry, generateApiKey, parseApiKeys } from "./api-keys.js";
import { createGatewayApp } from "./app.js";
import type { EventHub } from "./fanout.js";
import { answerRemainder } from "./answer-text.js";
import { deltas, finishReason } from "./openai.js";
import { eventId, isAfter, parseEventId } from "./stream.js";
import { SESSION_SLOT_RETRY_S } from "./stream-slots.js";
import { createLocalLimits } from "./testing.js";

const ALICE = generateApiKey();
const BOB = generateApiKey();

/**
 * These routes answer from the session store and the limits alone. NATS is not reached by any
 * route tested here: the connection throws if anything touches it, so a test cannot pass by
 * accident through a real submit (those paths run against real processes in test/e2e).
 */
const noNats = new Proxy(
  {},
  {
    get: (_t, p) => {
      throw new Error(`NATS used (${String(p)}) by a route that must not need it`);
    },
  },
) as NatsConnection;

/** A hub with no events at all: a stream on it stays open until its client leaves. */
const silentHub: EventHub = {
  ready: async () => {},
  listen: () => () => {},
  recent: () => [],
  position: () => 0,
  replay: async function* () {},
  stats: () => ({ sessions: 0, listeners: 0 }),
  stop: async () => {},
};

function setup(
  over: {
    anonymous?: boolean;
    rateLimit?: number;
    maxBodyBytes?: number;
    nc?: NatsConnection;
    corsOrigins?: string[];
    allowedHosts?: string[];
    maxOpenStreams?: number;
  } = {},
) {
  const store = createLocalSessionStore({
    keyPrefix: "gw",
    activeTtlMs: 60_000,
    finishedTtlMs: 60_000,
    idempotencyTtlMs: 60_000,
  });
  const limits = createLocalLimits({
    keyPrefix: "gw",
    rateLimit: over.rateLimit ?? 100,
    rateWindowMs: 60_000,
    maxConcurrentSessions: 5,
    sessionTtlMs: 60_000,
  });
  const inbox: InboxInput[] = [];
  const gw = createGatewayApp({
    nc: over.nc ?? noNats,
    naming: naming("gw"),
    store,
    limits,
    log: createLogger({ service: "test", level: "silent" }),
    submitTimeoutMs: 1000,
    publisher: {
      publishInbox: async (i) => {
        inbox.push(i);
      },
    },
    keys: parseApiKeys({ inline: [apiKeyEntry("alice", ALICE), apiKeyEntry("bob", BOB)].join(",") }),
    anonymous: over.anonymous ?? false,
    defaultWorkflow: "critic-chain",
    maxBodyBytes: over.maxBodyBytes ?? 4096,
    http: { corsOrigins: over.corsOrigins ?? [], allowedHosts: over.allowedHosts ?? [] },
    ready: async () => true,
    hub: silentHub,
    ...(over.maxOpenStreams === undefined ? {} : { maxOpenStreams: over.maxOpenStreams }),
  });
  const call = (path: string, init: RequestInit & { key?: string | null; json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    if (init.key !== null) headers.set("authorization", `Bearer ${init.key ?? ALICE}`);
    if (init.json !== undefined) headers.set("content-type", "application/json");
    return gw.app.request(path, {
      ...init,
      headers,
      ...(init.json !== undefined
        ? { body: typeof init.json === "string" ? init.json : JSON.stringify(init.json) }
        : {}),
    });
  };
  return { store, gw, call, inbox, limits };
}

/** A response body, loosely typed: the tests assert its shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const body = async (r: Response): Promise<any> => r.json();

/** No lone surrogate: the text is valid UTF-16. */
const wellFormed = (s: string): boolean =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

async function owned(
  store: ReturnType<typeof setup>["store"],
  sid: string,
  owner: string,
  status: SessionState["meta"]["status"] = "running",
) {
  const s = testSessionState(sid);
  await store.create({ ...s, meta: { ...s.meta, owner, status, thread_id: "thread-unit-01" } });
  await store.attachToThread("thread-unit-01", owner, sid, 1);
}

describe("gateway HTTP: auth, one error shape, ownership", () => {
  test("no key or a wrong key is 401 with a clear message; anonymous mode lets a keyless request in but never a wrong key", async () => {
    const { call } = setup();
    const none = await call("/api/v1/workflows", { key: null });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/Bearer/);
    expect(await none.json()).toEqual({
      error: { code: "unauthorized", message: "send an API key: Authorization: Bearer <key>", status: 401 },
    });
    expect((await call("/api/v1/workflows", { key: "am_not-a-real-key" })).status).toBe(401);
    expect((await call("/api/v1/workflows", { headers: { "x-api-key": BOB }, key: null })).status).toBe(200);
    const anon = setup({ anonymous: true });
    expect((await anon.call("/api/v1/workflows", { key: null })).status).toBe(200);
    expect((await anon.call("/api/v1/workflows", { key: "am_wrong" })).status).toBe(401);
  });

  test("a session, its events, reply, cancel and thread are 404 for another key, and the same 404 as a session that does not exist", async () => {
    const { call, store, inbox } = setup();
    await owned(store, "sess-alice-0001", "alice", "awaiting_user");
    const mine = await call("/api/v1/sessions/sess-alice-0001");
    expect(mine.status).toBe(200);
    expect(await mine.json()).toMatchObject({
      session_id: "sess-alice-0001",
      status: "awaiting_user",
      thread_id: "thread-unit-01",
      awaiting_user: { question: "" },
    });
    for (const [path, method] of [
      ["/api/v1/sessions/sess-alice-0001", "GET"],
      ["/api/v1/sessions/sess-alice-0001/events", "GET"],
      ["/api/v1/sessions/sess-alice-0001/reply", "POST"],
      ["/api/v1/sessions/sess-alice-0001/cancel", "POST"],
      ["/api/v1/threads/thread-unit-01", "GET"],
    ] as const) {
      const r = await call(path, { method, key: BOB, ...(method === "POST" ? { json: { text: "mine now" } } : {}) });
      expect(r.status, path).toBe(404);
      expect((await body(r)).error.code).toBe("not_found");
    }
    const missing = await call("/api/v1/sessions/sess-nobody-0001", { key: BOB });
    expect(await missing.json()).toEqual({
      error: { code: "not_found", message: "no session sess-nobody-0001", status: 404 },
    });
    expect(inbox).toEqual([]);
  });

  test("a reply goes to a waiting session as a client input; to a running one it is 409; cancel is one input however often clicked", async () => {
    const { call, store, inbox } = setup();
    await owned(store, "sess-wait-00001", "alice", "awaiting_user");
    await owned(store, "sess-run-000001", "alice", "running");
    expect(
      (await call("/api/v1/sessions/sess-wait-00001/reply", { method: "POST", json: { text: "Blue" } })).status,
    ).toBe(202);
    expect(inbox.at(-1)).toMatchObject({ kind: "user_reply", session_id: "sess-wait-00001", text: "Blue" });
    const busy = await call("/api/v1/sessions/sess-run-000001/reply", { method: "POST", json: { text: "Blue" } });
    expect(busy.status).toBe(409);
    expect((await body(busy)).error.message).toBe("session sess-run-000001 is running, not waiting for an answer");
    await call("/api/v1/sessions/sess-run-000001/cancel", { method: "POST" });
    await call("/api/v1/sessions/sess-run-000001/cancel", { method: "POST", json: { reason: "changed my mind" } });
    const cancels = inbox.filter((i) => i.kind === "cancel");
    expect(new Set(cancels.map((c) => c.input_id)).size).toBe(1);
  });

  test("bad bodies are 400/413/415 naming the problem, never a stack trace", async () => {
    const { call } = setup({ maxBodyBytes: 2048 });
    const cases: Array<[unknown, number, RegExp]> = [
      ["{bad json", 400, /^the body is not valid JSON/],
      [{ query: 5 }, 400, /^the query must be text$/],
      [{ query: "hi", workflow: "blackboard" }, 400, /shorter than 3 characters \(the blackboard workflow's minimum\)/],
      [{ query: "   " }, 400, /^the query is empty$/],
      [
        { query: "What is 2 + 2?", budgets: { max_steps: "x" } },
        400,
        /^invalid request: .*expected number.* at budgets\.max_steps/,
      ],
      [{ query: "What is 2 + 2?", workflow: "nope" }, 400, /^invalid request: .* at workflow/],
      [{ query: "What is 2 + 2?", surprise: true }, 400, /surprise/],
      [{ query: "x".repeat(3000) }, 413, /over 2048 bytes/],
    ];
    for (const [json, status, message] of cases) {
      const r = await call("/api/v1/query", { method: "POST", json });
      expect(r.status, JSON.stringify(json).slice(0, 60)).toBe(status);
      const b = await body(r);
      expect(b.error.message).toMatch(message);
      expect(JSON.stringify(b)).not.toMatch(/at .*\.ts:\d+/);
    }
    const form = await call("/api/v1/query", {
      method: "POST",
      body: "query=hello",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(415);
    const badId = await call("/api/v1/sessions/sess-any-000001/events", { headers: { "last-event-id": "seven" } });
    expect(badId.status).toBe(404); // ownership first: nothing about a session that is not yours
  });

  test("attachments: each bound refused with a 400 naming the field; valid ones reach the coordinator's submit as options.attachments", async () => {
    const submits: SubmitRequest[] = [];
    // Only the submit request is answered (accepted): what the gateway sent is what this test checks.
    const nc = {
      request: async (_subject: string, data: Uint8Array) => {
        const req = JSON.parse(new TextDecoder().decode(data)) as SubmitRequest;
        submits.push(req);
        // The coordinator refuses a start over the message limit; this one is told by its file name.
        const reply =
          req.options.attachments?.[0]?.name === "too-big.txt"
            ? {
                v: SCHEMA_VERSION,
                ok: false,
                error: {
                  code: "payload_too_large",
                  message: "the session's start is 300000 bytes, over the 262144-byte message limit; send less",
                  retryable: false,
                  component: "coordinator",
                },
              }
            : { v: SCHEMA_VERSION, ok: true, session_id: req.session_id, created: true, thread_id: req.thread_id };
        return { data: new TextEncoder().encode(JSON.stringify(reply)), headers: undefined };
      },
    } as unknown as NatsConnection;
    const { call } = setup({ maxBodyBytes: 512 * 1024, nc });
    const csv: Attachment = { name: "sales.csv", content_type: "text/csv", content: "region,total\nA,5" };
    const ask = (attachments: unknown) =>
      call("/api/v1/query", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { query: "Total the sales", workflow: "supervisor", attachments },
      });
    const cases: Array<[unknown, RegExp]> = [
      [[{ ...csv, name: "../secret.csv" }], /^invalid request: .*path separator.* at attachments\[0\]\.name/],
      [[{ ...csv, content_type: "image/png" }], /^invalid request: .* at attachments\[0\]\.content_type/],
      [[{ ...csv, size: 3 }], /^invalid request: .*size.* at attachments\[0\]/],
      [Array.from({ length: LIMITS.maxAttachments + 1 }, () => csv), /^invalid request: .* at attachments$/],
      [
        [csv, { ...csv, content: "x".repeat(LIMITS.maxAttachmentChars) }],
        new RegExp(`over ${LIMITS.maxAttachmentChars} characters in all → at attachments`),
      ],
      ["sales.csv", /^invalid request: .* at attachments/],
    ];
    for (const [attachments, message] of cases) {
      const r = await ask(attachments);
      expect(r.status, JSON.stringify(attachments).slice(0, 60)).toBe(400);
      expect((await body(r)).error).toMatchObject({
        code: "bad_request",
        status: 400,
        message: expect.stringMatching(message),
      });
    }
    expect(submits).toEqual([]);
    const ok = await ask([csv, { name: "notes.txt", content_type: "text/plain", content: "" }]);
    expect(ok.status).toBe(202);
    expect(submits).toHaveLength(1);
    expect(submits[0]?.options).toEqual({
      attachments: [csv, { name: "notes.txt", content_type: "text/plain", content: "" }],
    });
    expect((await ask([])).status).toBe(202);
    expect(submits[1]?.options).toEqual({});
    const big = await ask([{ ...csv, name: "too-big.txt" }]);
    expect(big.status).toBe(413);
    expect((await body(big)).error).toMatchObject({
      code: "payload_too_large",
      message: expect.stringContaining("over the 262144-byte message limit"),
    });
  });

  test("the rate limit counts POSTs per key: over it is 429 with Retry-After; another key is unaffected", async () => {
    const { call, store } = setup({ rateLimit: 2 });
    await owned(store, "sess-rate-00001", "alice", "running");
    const post = (key: string) => call("/api/v1/sessions/sess-rate-00001/cancel", { method: "POST", key });
    expect((await post(ALICE)).status).toBe(202);
    expect((await post(ALICE)).status).toBe(202);
    const third = await post(ALICE);
    expect(third.status).toBe(429);
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await body(third)).error.code).toBe("rate_limited");
    expect((await post(BOB)).status).toBe(404); // bob is not limited by alice's count (and does not own the session)
    expect((await call("/api/v1/sessions/sess-rate-00001")).status).toBe(200); // reads are not counted
  });

  test("a query counts once against the rate (with its admission), a bad one too, a refused one not at all", async () => {
    const { call, limits } = setup({ rateLimit: 3 });
    const query = (json: unknown) => call("/api/v1/query", { method: "POST", json });
    const chat = (content: string) =>
      call("/v1/chat/completions", {
        method: "POST",
        json: { model: "agentmesh/critic-chain", messages: [{ role: "user", content }] },
      });
    expect((await query({ query: "" })).status).toBe(400); // counted: 1
    for (let i = 0; i < 5; i++) await limits.admit("alice", `busysession${i}x`, async () => true);
    expect((await query({ query: "What is 2 + 2?" })).status).toBe(429); // sessions full: refused, not counted
    await limits.release("alice", "busysession0x");
    // admitted (counted: 2, 3); no coordinator answers here, so each then fails, its slot given back
    expect((await query({ query: "What is 2 + 2?" })).status).toBeGreaterThanOrEqual(500);
    expect((await chat("What is 2 + 2?")).status).toBeGreaterThanOrEqual(500);
    for (const r of [await query({ query: "What is 3 + 3?" }), await chat("What is 3 + 3?"), await query({})]) {
      expect(r.status).toBe(429);
      expect((await body(r)).error.code).toBe("rate_limited");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    expect((await limits.allowRequest("bob")).allowed).toBe(true);
  });

  test("a supervisor mode that is not one of its agents is a 400 naming the agents, and nothing is submitted", async () => {
    const { call, inbox } = setup();
    for (const mode of ["poetry", 42, "Research", null]) {
      const r = await call("/api/v1/query", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { query: "What is 2 + 2?", workflow: "supervisor", mode },
      });
      expect(r.status, JSON.stringify(mode)).toBe(400);
      expect(await body(r)).toEqual({
        error: {
          code: "bad_request",
          message: expect.stringMatching(/"chat"\|"research"\|"code"\|"writing"\|"data" → at mode$/),
          status: 400,
        },
      });
    }
    expect(inbox).toEqual([]);
  });

  test("the OpenAI routes answer in OpenAI's error shape", async () => {
    const { call } = setup();
    const unknown = await call("/v1/chat/completions", {
      method: "POST",
      json: { model: "gpt-4o", messages: [{ role: "user", content: "What is 2 + 2?" }] },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: {
        message: expect.stringMatching(/agentmesh\/critic-chain/),
        type: "invalid_request_error",
        param: null,
        code: "model_not_found",
      },
    });
    const notUser = await call("/v1/chat/completions", {
      method: "POST",
      json: { model: "agentmesh/critic-chain", messages: [{ role: "assistant", content: "Hello" }] },
    });
    expect(notUser.status).toBe(400);
    const badThread = await call("/v1/chat/completions", {
      method: "POST",
      json: {
        model: "agentmesh/critic-chain",
        metadata: { thread_id: "a b" },
        messages: [{ role: "user", content: "What is 2 + 2?" }],
      },
    });
    expect(badThread.status).toBe(400);
    expect((await body(badThread)).error.message).toMatch(/thread id/);
    const noKey = await call("/v1/models", { key: null });
    expect((await body(noKey)).error.type).toBe("authentication_error");
    const models = await body(await call("/v1/models"));
    expect(models.data.map((m: { id: string }) => m.id)).toEqual([
      "agentmesh/critic-chain",
      "agentmesh/blackboard",
      "agentmesh/halo",
      "agentmesh/supervisor",
      "agentmesh/clarify",
    ]);
  });

  test("/v1 speaks OpenAI's codes: one model by id, model_not_found, invalid_api_key; /api keeps its own", async () => {
    const { call } = setup();
    for (const path of ["/v1/models/agentmesh%2Fhalo", "/v1/models/agentmesh/halo"]) {
      const one = await call(path);
      expect(one.status, path).toBe(200);
      expect(await body(one)).toMatchObject({ id: "agentmesh/halo", object: "model", owned_by: "agentmesh" });
    }
    const missing = await call("/v1/models/agentmesh%2Fnope");
    expect(missing.status).toBe(404);
    expect((await body(missing)).error).toMatchObject({ code: "model_not_found", type: "invalid_request_error" });
    const chat = await call("/v1/chat/completions", {
      method: "POST",
      json: { model: "gpt-4o", messages: [{ role: "user", content: "What is 2 + 2?" }] },
    });
    expect(chat.status).toBe(404);
    expect((await body(chat)).error.code).toBe("model_not_found");
    const badKey = await body(await call("/v1/models", { key: "am_nope" }));
    expect(badKey.error).toMatchObject({ code: "invalid_api_key", type: "authentication_error" });
    const apiBadKey = await body(await call("/api/v1/workflows", { key: "am_nope" }));
    expect(apiBadKey.error.code).toBe("unauthorized");
  });

  test("too_many_sessions is 429 with Retry-After, on /api and on /v1", async () => {
    const { call, limits } = setup();
    for (let i = 0; i < 5; i++) await limits.admit("alice", `busysession${i}x`, async () => true);
    const api = await call("/api/v1/query", { method: "POST", json: { query: "What is 2 + 2?" } });
    expect(api.status).toBe(429);
    expect((await body(api)).error.code).toBe("too_many_sessions");
    expect(api.headers.get("retry-after")).toBe(String(SESSION_SLOT_RETRY_S));
    const v1 = await call("/v1/chat/completions", {
      method: "POST",
      json: { model: "agentmesh/critic-chain", messages: [{ role: "user", content: "What is 2 + 2?" }] },
    });
    expect(v1.status).toBe(429);
    expect((await body(v1)).error).toMatchObject({ code: "too_many_sessions", type: "rate_limit_error" });
    expect(v1.headers.get("retry-after")).toBe(String(SESSION_SLOT_RETRY_S));
  });

  test("draining: /readyz fails and new API requests are turned away with 503", async () => {
    const { call, gw } = setup();
    expect((await call("/readyz", { key: null })).status).toBe(200);
    gw.drain();
    expect((await call("/readyz", { key: null })).status).toBe(503);
    const r = await call("/api/v1/workflows");
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBe("1");
  });
});

describe("open streams per replica", () => {
  test("at most maxOpenStreams at once; one more is a 503 with Retry-After before any session starts, and an ended stream frees its slot", async () => {
    const { call, store, gw } = setup({ maxOpenStreams: 2 });
    await owned(store, "sess-alice-0001", "alice");
    const leave = [new AbortController(), new AbortController()];
    for (const ac of leave)
      expect((await call("/api/v1/sessions/sess-alice-0001/events", { signal: ac.signal })).status).toBe(200);
    expect(gw.openStreams()).toBe(2);
    const refused = await call("/api/v1/sessions/sess-alice-0001/events");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect((await body(refused)).error.code).toBe("unavailable");
    // refused before a session is started: a submit would reach NATS, which throws here
    const query = await call("/api/v1/query", { method: "POST", json: { query: "What is 2 + 2?" } });
    expect(query.status).toBe(503);
    const chat = await call("/v1/chat/completions", {
      method: "POST",
      json: { model: "agentmesh/halo", messages: [{ role: "user", content: "What is 2 + 2?" }] },
    });
    expect(chat.status).toBe(503);
    expect((await body(chat)).error).toMatchObject({ type: "server_error", code: "unavailable" });
    leave[0]!.abort();
    for (let i = 0; i < 50 && gw.openStreams() > 1; i++) await new Promise((r) => setTimeout(r, 10));
    expect(gw.openStreams()).toBe(1);
    const again = new AbortController();
    expect((await call("/api/v1/sessions/sess-alice-0001/events", { signal: again.signal })).status).toBe(200);
    again.abort();
    leave[1]!.abort();
  });
});

describe("event ids and answer deltas", () => {
  test("Last-Event-ID parses as <seq>:<version>:<index> (or an earlier release's <version>:<index>); order is by version, then index", () => {
    expect(parseEventId("57:12:3")).toEqual({ seq: 57, version: 12, index: 3 });
    expect(eventId({ seq: 57, version: 12, index: 3 })).toBe("57:12:3");
    expect(parseEventId("12:3")).toEqual({ version: 12, index: 3 });
    expect(parseEventId(undefined)).toBeNull();
    for (const bad of ["12", "a:b", "1:2:3:4", "-1:0", "1e3:0", "1:-2:3", ":1:2"])
      expect(parseEventId(bad)).toBeUndefined();
    expect(isAfter({ version: 3, index: 0 }, { version: 2, index: 9 })).toBe(true);
    expect(isAfter({ version: 2, index: 9 }, { version: 2, index: 9 })).toBe(false);
    expect(isAfter({ version: 2, index: 1 }, null)).toBe(true);
  });

  test("the streamed answer is always the final answer: the rest after a streamed beginning, none when they disagree", () => {
    expect(answerRemainder("", "The answer is 4.")).toBe("The answer is 4.");
    expect(answerRemainder("The ans", "The answer is 4.")).toBe("wer is 4.");
    expect(answerRemainder("A different", "The answer is 4.")).toBeNull();
    // an answer cut to fit its event, the stream holding all of it: nothing to add, nothing restarted
    expect(answerRemainder("The answer is 4.", "The answer", true)).toBe("");
    expect(answerRemainder("The answer is 4.", "The answer")).toBeNull();
    expect(answerRemainder("Another answer", "The answer", true)).toBeNull();
    const text = "word ".repeat(50).trim();
    const parts = deltas(text, 12);
    expect(parts.join("")).toBe(text);
    expect(parts.length).toBeGreaterThan(10);
    expect(deltas("")).toEqual([]);
  });

  test("anonymous mode answers only requests addressed to a loopback name or an allowed host (DNS rebinding refused)", async () => {
    const { call } = setup({ anonymous: true, allowedHosts: ["agentmesh.local"] });
    const at = (host: string, path = "/api/v1/workflows") => call(path, { key: null, headers: { host } });
    for (const host of ["localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST", "agentmesh.local:80"])
      expect((await at(host)).status, host).toBe(200);
    for (const host of ["evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]:80"]) {
      const r = await at(host);
      expect(r.status, host).toBe(403);
      expect((await body(r)).error).toMatchObject({ code: "host_not_allowed" });
      expect((await at(host, "/v1/models")).status, host).toBe(403);
      expect((await at(host, "/")).status, host).toBe(403);
    }
    // the probes answer whatever the Host (a kubelet sends the pod's address)
    expect((await at("10.0.0.7:8080", "/healthz")).status).toBe(200);
    // with keys, the Host is not checked: every request carries a key a page cannot know
    const keyed = setup();
    expect((await keyed.call("/api/v1/workflows", { headers: { host: "evil.example" } })).status).toBe(200);
  });

  test("CORS: no origin by default; a configured origin gets the headers it needs, another gets none", async () => {
    const preflight = (call: ReturnType<typeof setup>["call"], origin: string) =>
      call("/v1/chat/completions", {
        method: "OPTIONS",
        key: null,
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization" },
      });
    const none = setup();
    expect(
      (await preflight(none.call, "https://app.example.com")).headers.get("access-control-allow-origin"),
    ).toBeNull();
    const get = await none.call("/api/v1/workflows", { headers: { origin: "https://app.example.com" } });
    expect(get.headers.get("access-control-allow-origin")).toBeNull();

    const some = setup({ corsOrigins: ["https://app.example.com"] });
    const ok = await preflight(some.call, "https://app.example.com");
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(ok.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
    const answer = await some.call("/api/v1/workflows", { headers: { origin: "https://app.example.com" } });
    expect(answer.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(answer.headers.get("access-control-expose-headers")).toMatch(/X-Agentmesh-Session/);
    const other = await preflight(some.call, "https://evil.example");
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });

  test("API answers are no-store and nosniff; a key is checked before the body's size", async () => {
    const { call } = setup({ maxBodyBytes: 2048 });
    for (const r of [await call("/api/v1/workflows"), await call("/v1/models"), await call("/api/v1/sessions/nope")]) {
      expect(r.headers.get("cache-control")).toBe("no-store");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    }
    const big = { query: "x".repeat(5000) };
    const anonymousBig = await call("/api/v1/query", { method: "POST", key: null, json: big });
    expect(anonymousBig.status).toBe(401);
    const keyedBig = await call("/api/v1/query", { method: "POST", json: big });
    expect(keyedBig.status).toBe(413);
  });

  test("deltas never split a 4-byte character: an emoji answer cut at every offset and every size is valid UTF-16 piece by piece", () => {
    const answer = "😀 Ok 🧬🧬 x👍🏽y 𝔸";
    const decoder = new TextDecoder("utf-8", { fatal: true });
    for (let size = 1; size <= answer.length + 1; size++) {
      const parts = deltas(answer, size);
      expect(parts.join(""), `size ${size}`).toBe(answer);
      for (const p of parts) {
        expect(wellFormed(p), `size ${size}: ${JSON.stringify(p)}`).toBe(true);
        // a strict decoder takes each piece as the client receives it
        expect(decoder.decode(new TextEncoder().encode(p))).toBe(p);
      }
    }
    // the text after any streamed beginning cut at a valid offset is itself cut validly
    for (let at = 0; at <= answer.length; at++) {
      const streamed = answer.slice(0, at);
      if (!wellFormed(streamed)) continue;
      for (const p of deltas(answerRemainder(streamed, answer) ?? "", 2)) expect(wellFormed(p)).toBe(true);
    }
  });

  test("finish_reason follows how the turn ended", () => {
    const of = (status: string, truncated = false) => finishReason({ status, truncated });
    expect(of("completed")).toBe("stop");
    expect(of("awaiting_user")).toBe("stop");
    expect(of("completed", true)).toBe("length");
    expect(of("budget_exceeded")).toBe("length");
    expect(of("failed")).toBe("error");
    expect(of("cancelled")).toBe("cancelled");
  });

  test("Chat Completions fields the workflows cannot honour are a 400 naming the field, before any session starts", async () => {
    const { call, inbox } = setup();
    const ask = { model: "agentmesh/critic-chain", messages: [{ role: "user", content: "What is 2 + 2?" }] };
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ n: 2 }, "n", /n must be 1/],
      [{ tool_choice: "required" }, "tool_choice", /never calls the client's tools.*"required"/],
      [{ tool_choice: { type: "function", function: { name: "f" } } }, "tool_choice", /"function"/],
      [{ function_call: { name: "f" } }, "function_call", /function_call "object"/],
      [{ response_format: { type: "json_schema", json_schema: { name: "x" } } }, "response_format", /"json_schema"/],
      [{ response_format: { type: "json_object" } }, "response_format", /"json_object"/],
      [{ logprobs: true }, "logprobs", /log probabilities/],
      [{ top_logprobs: 3 }, "top_logprobs", /log probabilities/],
      [{ modalities: ["text", "audio"] }, "modalities", /text only/],
      [{ audio: { voice: "alloy", format: "wav" } }, "audio", /audio output/],
    ];
    for (const [fields, param, message] of cases) {
      const r = await call("/v1/chat/completions", { method: "POST", json: { ...ask, ...fields } });
      expect(r.status, JSON.stringify(fields)).toBe(400);
      expect(await r.json()).toEqual({
        error: {
          message: expect.stringMatching(message),
          type: "invalid_request_error",
          param,
          code: "unsupported_parameter",
        },
      });
    }
    expect(inbox).toEqual([]);
  });
});
