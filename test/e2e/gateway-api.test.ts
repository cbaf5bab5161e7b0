import { randomInt } from "node:crypto";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { conversationTurn, type SessionEvent } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import { testSessionState } from "@agentmesh/session-store/testing";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, type Proc } from "./harness.js";
import {
  STACK_TRACE,
  apiError,
  call,
  curl,
  nextEvent,
  openSse,
  parseSse,
  readAll,
  sessionEvents,
  slowSessions,
} from "./gateway-kit.js";

// The gateway's HTTP API as clients see it: real gateway processes on loopback (two replicas with
// roomy limits, two with tight ones) under NATS access control, one coordinator, the critic-chain
// agents on the scripted model (slow on purpose, so streams can be cut mid-session), and the
// critic and blackboard agents on the offline engine.

const KEYS = {
  alice: generateApiKey(),
  bob: generateApiKey(),
  carol: generateApiKey(),
  dave: generateApiKey(),
  erin: generateApiKey(),
  frank: generateApiKey(),
  gina: generateApiKey(),
  hana: generateApiKey(),
};
const ALICE = KEYS.alice;
const BOB = KEYS.bob;
const SCRIPTED = ["planner", "researcher", "expert", "finalizer"] as const;
const OFFLINE = ["critic", "perception", "memory", "retriever", "decision", "executor"] as const;
const QUESTION = "What is CRISPR and who invented it?";
const RATE_LIMIT = 5;
const MAX_SESSIONS = 2;
const MAX_BODY = 2048;
const MAX_STREAMS = 3;
const OPEN_RATE = 6;

let llm: ScriptedServer;
let cluster: Cluster;
/** Two replicas with roomy limits (A) and two with tight ones (L), all on one prefix. */
let a1: string, a2: string, l1: string, l2: string;
let a2proc: Proc;

beforeAll(async () => {
  llm = await startScriptedOpenAIServer({ script: slowSessions(30, 120) });
  cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix("gwa"),
    llmBaseUrl: llm.url,
  });
  await cluster.open();
  cluster.start("coordinator");
  for (const r of SCRIPTED) cluster.start(r);
  for (const r of OFFLINE) cluster.start(r, { AGENTMESH_LLM_BASE_URL: "" });
  const keys = {
    AGENTMESH_API_KEYS: Object.entries(KEYS)
      .map(([name, key]) => apiKeyEntry(name, key))
      .join(","),
  };
  const roomy = {
    ...keys,
    AGENTMESH_RATE_LIMIT: "10000",
    AGENTMESH_MAX_CONCURRENT_SESSIONS: "100",
    AGENTMESH_STREAM_OPEN_RATE: "10000", // the forced disconnects reconnect faster than a person would
  };
  const tight = {
    ...keys,
    AGENTMESH_RATE_LIMIT: String(RATE_LIMIT),
    AGENTMESH_RATE_WINDOW_MS: "60000",
    AGENTMESH_MAX_CONCURRENT_SESSIONS: String(MAX_SESSIONS),
    AGENTMESH_MAX_BODY_BYTES: String(MAX_BODY),
    AGENTMESH_MAX_STREAMS_PER_KEY: String(MAX_STREAMS),
    AGENTMESH_STREAM_OPEN_RATE: String(OPEN_RATE),
  };
  const [ga1, ga2, gl1, gl2] = await Promise.all(
    [roomy, roomy, tight, tight].map((env) => cluster.startGateway(env, 120_000)),
  );
  [a1, a2, l1, l2] = [ga1!.url, ga2!.url, gl1!.url, gl2!.url];
  a2proc = ga2!.proc;
  await cluster.waitReady(
    { coordinator: 1, ...Object.fromEntries([...SCRIPTED, ...OFFLINE].map((r) => [r, 1])) },
    120_000,
  );
}, 180_000);

afterAll(async () => {
  await cluster?.close();
  await llm?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Starts a query without streaming (202); returns its ids. */
async function startQuery(
  base: string,
  key: string,
  body: Record<string, unknown> = {},
): Promise<{ session_id: string; thread_id: string }> {
  const r = await call(base, "/api/v1/query", { key, json: { query: QUESTION, ...body } });
  expect(r.status, r.text).toBe(202);
  return r.body as { session_id: string; thread_id: string };
}

/** The session's final answer as the store holds it. */
async function finalAnswer(sid: string): Promise<string> {
  const loaded = await cluster.store.load(sid);
  const answer = loaded ? conversationTurn(loaded.state).answer : null;
  if (answer === null) throw new Error(`session ${sid} has no final answer`);
  return answer;
}

const openai = (base: string, key: string) =>
  new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });

describe("curl as a real SSE client", () => {
  test("POST /api/v1/query streams to `complete`; GET …/events with Last-Event-ID returns exactly the events after it", async () => {
    const posted = await curl([
      "-i",
      "-X",
      "POST",
      `${a1}/api/v1/query`,
      "-H",
      `Authorization: Bearer ${ALICE}`,
      "-H",
      "Content-Type: application/json",
      "--data",
      JSON.stringify({ query: QUESTION }),
    ]);
    expect(posted.code, posted.err).toBe(0);
    const [head = "", body = ""] = posted.out.split(/\r\n\r\n(.*)/s);
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head).toMatch(/^content-type: text\/event-stream/im);
    const messages = parseSse(body);
    expect(messages[0]).toMatchObject({ event: "session", id: undefined });
    const { session_id: sid } = JSON.parse(messages[0]?.data ?? "{}") as { session_id: string };
    expect(head).toContain(`x-agentmesh-session: ${sid}`);
    const truth = (await cluster.waitDone(sid)).events;
    expect(sessionEvents(messages)).toEqual(truth);

    const cut = Math.floor(truth.length / 2);
    const after = truth[cut]!;
    // the id as the server sent it: the event's stream sequence, then its version and index
    const afterId = messages.filter((m) => m.id !== undefined)[cut]?.id ?? "";
    expect(afterId).toMatch(new RegExp(`^\\d+:${after.version}:${after.index}$`));
    const resumed = await curl([
      `${a2}/api/v1/sessions/${sid}/events`,
      "-H",
      `Authorization: Bearer ${ALICE}`,
      "-H",
      `Last-Event-ID: ${afterId}`,
    ]);
    expect(resumed.code, resumed.err).toBe(0);
    expect(sessionEvents(parseSse(resumed.out))).toEqual(truth.slice(cut + 1));

    // After the last event there is nothing more: the stream ends at once, it does not wait forever
    // (asked with an id as an earlier release sent it, `<version>:<index>`).
    const last = truth.at(-1)!;
    const done = await curl([
      "--max-time",
      "10",
      `${a1}/api/v1/sessions/${sid}/events?last_event_id=${last.version}:${last.index}`,
      "-H",
      `Authorization: Bearer ${ALICE}`,
    ]);
    expect(done.code, done.err).toBe(0);
    expect(sessionEvents(parseSse(done.out))).toEqual([]);
  });
});

/**
 * A client that reads a few (1–3) events of a session, hangs up, and reconnects to the other
 * replica with Last-Event-ID, until it has read `complete`. Returns what it read and how often it hung up.
 */
async function hoppingClient(
  sid: string,
  replicas: readonly string[],
  first: number,
): Promise<{ events: SessionEvent[]; disconnects: number }> {
  const events: SessionEvent[] = [];
  let disconnects = 0;
  for (let hop = first; ; hop++) {
    const last = events.at(-1);
    const client = await openSse(`${replicas[hop % replicas.length]}/api/v1/sessions/${sid}/events`, {
      headers: { ...bearer(ALICE), ...(last ? { "last-event-id": `${last.version}:${last.index}` } : {}) },
    });
    expect(client.res.status).toBe(200);
    for (let k = randomInt(1, 4); k > 0; k--) {
      const e = await nextEvent(client);
      if (e === null)
        throw new Error(`the stream of ${sid} ended before its complete event (after ${events.length} events)`);
      events.push(e);
      if (e.type === "complete") return { events, disconnects };
    }
    client.hangUp();
    disconnects++;
  }
}

/** Duplicates, missing and unexpected events of what a client read, against the session's own list. */
function tally(read: readonly SessionEvent[], truth: readonly SessionEvent[]) {
  const ids = read.map((e) => `${e.version}:${e.index}`);
  const want = new Set(truth.map((e) => `${e.version}:${e.index}`));
  return {
    duplicates: ids.length - new Set(ids).size,
    missing: [...want].filter((id) => !ids.includes(id)).length,
    unexpected: ids.filter((id) => !want.has(id)).length,
  };
}

describe("reconnecting across replicas", () => {
  test("≥ 100 forced disconnects across two replicas: every client reads each event exactly once, in order", async () => {
    const sids = await Promise.all([a1, a2, a1, a2].map(async (base) => (await startQuery(base, ALICE)).session_id));
    const live = await Promise.all(sids.map((sid, i) => hoppingClient(sid, [a1, a2], i)));
    const truth = await Promise.all(sids.map(async (sid) => (await cluster.waitDone(sid)).events));
    const passes = live.map((r, i) => ({ ...r, truth: truth[i]! }));
    // Sessions rarely give fewer, but the count is a promise: replay finished ones the same way until it holds.
    for (let i = 0; passes.reduce((n, p) => n + p.disconnects, 0) < 100; i++)
      passes.push({ ...(await hoppingClient(sids[i % sids.length]!, [a1, a2], i)), truth: truth[i % sids.length]! });

    const disconnects = passes.reduce((n, p) => n + p.disconnects, 0);
    const totals = passes
      .map((p) => tally(p.events, p.truth))
      .reduce((a, b) => ({
        duplicates: a.duplicates + b.duplicates,
        missing: a.missing + b.missing,
        unexpected: a.unexpected + b.unexpected,
      }));
    const eventsRead = passes.reduce((n, p) => n + p.events.length, 0);
    console.info(
      `gateway SSE: ${disconnects} forced disconnects (${live.reduce((n, p) => n + p.disconnects, 0)} while the sessions ran), ${passes.length} client passes, ${eventsRead} events read, ${JSON.stringify(totals)}`,
    );
    expect(disconnects).toBeGreaterThanOrEqual(100);
    expect(totals).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    for (const p of passes) expect(p.events).toEqual(p.truth);
    for (const t of truth) expect(t.at(-1)).toMatchObject({ type: "complete", status: "completed" });
  });

  test("a client that leaves mid-session does not cancel it", async () => {
    const client = await openSse(`${a2}/api/v1/query`, {
      method: "POST",
      headers: { ...bearer(ALICE), "content-type": "application/json" },
      body: JSON.stringify({ query: QUESTION }),
    });
    expect(client.res.status).toBe(200);
    const sid = client.res.headers.get("x-agentmesh-session") ?? "";
    expect((await client.next())?.event).toBe("session");
    expect(await nextEvent(client)).toMatchObject({
      session_id: sid,
      version: 1,
      index: 0,
      type: "stage",
      status: "running",
    });
    client.hangUp();
    const { state } = await cluster.waitDone(sid);
    expect(state.meta.status).toBe("completed");
    const summary = await call(a1, `/api/v1/sessions/${sid}`, { key: ALICE });
    expect(summary.body).toMatchObject({
      session_id: sid,
      status: "completed",
      final_answer: await finalAnswer(sid),
      error: null,
    });
  });
});

describe("per-key isolation", () => {
  test("another key gets 404 (never 403) for a session, its events, reply, cancel and thread, and for its thread_id", async () => {
    const { session_id: sid, thread_id: tid } = await startQuery(a1, ALICE);
    const notFound = (what: string) => apiError("not_found", 404, `no ${what}`);
    for (const base of [a1, a2]) {
      expect((await call(base, `/api/v1/sessions/${sid}`, { key: BOB })).body).toEqual(notFound(`session ${sid}`));
      expect((await call(base, `/api/v1/sessions/${sid}/events`, { key: BOB })).body).toEqual(
        notFound(`session ${sid}`),
      );
      expect((await call(base, `/api/v1/sessions/${sid}/reply`, { key: BOB, json: { text: "Celsius" } })).body).toEqual(
        notFound(`session ${sid}`),
      );
      expect((await call(base, `/api/v1/sessions/${sid}/cancel`, { key: BOB, json: {} })).body).toEqual(
        notFound(`session ${sid}`),
      );
      expect((await call(base, `/api/v1/threads/${tid}`, { key: BOB })).body).toEqual(notFound(`thread ${tid}`));
      expect((await call(base, "/api/v1/query", { key: BOB, json: { query: QUESTION, thread_id: tid } })).body).toEqual(
        notFound(`thread ${tid}`),
      );
    }
    // The owner's session went on untouched, and the thread still holds only it.
    expect((await cluster.waitDone(sid)).state.meta.status).toBe("completed");
    const viaHeader = await call(a1, `/api/v1/sessions/${sid}`, { headers: { "x-api-key": ALICE } });
    expect(viaHeader.body).toMatchObject({ session_id: sid, status: "completed" });
    const thread = await call(a2, `/api/v1/threads/${tid}`, { key: ALICE });
    expect(thread.body).toMatchObject({ thread_id: tid, sessions: [{ session_id: sid, status: "completed" }] });
  });
});

describe("limits hold exactly across two replicas", () => {
  const alternating = <T>(n: number, f: (base: string) => Promise<T>) =>
    Promise.all(Array.from({ length: n }, (_, i) => f(i % 2 ? l2 : l1)));

  test(`rate: of 12 concurrent POSTs of one key, exactly ${RATE_LIMIT} pass; the rest are 429 rate_limited with Retry-After`, async () => {
    // carol's session comes in over NATS, so none of her gateway requests is spent on it.
    const sid = await cluster.submit(QUESTION, "gwratelimit000000001", { owner: "carol" });
    const answers = await alternating(12, (base) =>
      call(base, `/api/v1/sessions/${sid}/cancel`, { key: KEYS.carol, json: { reason: "rate test" } }),
    );
    const accepted = answers.filter((a) => a.status === 202);
    const limited = answers.filter((a) => a.status === 429);
    expect({ accepted: accepted.length, limited: limited.length }).toEqual({
      accepted: RATE_LIMIT,
      limited: 12 - RATE_LIMIT,
    });
    for (const a of accepted) expect(a.body).toEqual({ session_id: sid });
    for (const a of limited) {
      expect(a.body).toEqual(apiError("rate_limited", 429, /^too many requests for this API key; retry in \d+ s$/));
      const retry = Number(a.headers.get("retry-after"));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
    }
    expect((await cluster.waitDone(sid)).state.meta.status).toBe("cancelled");
  });

  test(`sessions: of 5 concurrent queries of one key, exactly ${MAX_SESSIONS} start; the rest are 429 too_many_sessions`, async () => {
    const answers = await alternating(5, (base) =>
      call(base, "/api/v1/query", { key: KEYS.dave, json: { query: QUESTION } }),
    );
    const started = answers.filter((a) => a.status === 202);
    expect(started).toHaveLength(MAX_SESSIONS);
    expect(answers.filter((a) => a.status === 429).map((a) => a.body)).toEqual(
      Array.from({ length: 5 - MAX_SESSIONS }, () =>
        apiError(
          "too_many_sessions",
          429,
          `this API key already has ${MAX_SESSIONS} sessions running (at most ${MAX_SESSIONS}); wait for one to end or cancel one`,
        ),
      ),
    );
    for (const a of started)
      expect((await cluster.waitDone((a.body as { session_id: string }).session_id)).state.meta.status).toBe(
        "completed",
      );
  });

  test("a session waiting for a person holds no slot; its reply takes one again (429 while the key's slots are full)", async () => {
    const ask = { query: "Where does the handbook say to store samples at 4 degrees?", workflow: "blackboard" };
    const asked = await call(l1, "/api/v1/query", { key: KEYS.frank, json: ask });
    expect(asked.status, asked.text).toBe(202);
    const sid = (asked.body as { session_id: string }).session_id;
    for (let i = 0; (await cluster.store.load(sid))?.state.meta.status !== "awaiting_user"; i++) {
      expect(i, "the blackboard session asks the person within 30 s").toBeLessThan(300);
      await new Promise((r) => setTimeout(r, 100));
    }
    // the paused session's slot is free: both of the key's slots go to new sessions
    const running = await alternating(2, (base) =>
      call(base, "/api/v1/query", { key: KEYS.frank, json: { query: QUESTION } }),
    );
    expect(running.map((r) => r.status)).toEqual([202, 202]);
    const early = await call(l2, `/api/v1/sessions/${sid}/reply`, { key: KEYS.frank, json: { text: "Celsius" } });
    expect(early.status).toBe(429);
    expect(early.body).toEqual(apiError("too_many_sessions", 429, /already has 2 sessions running/));
    expect(early.headers.get("retry-after")).toBe("5");
    expect((await cluster.store.load(sid))?.state.meta.status).toBe("awaiting_user"); // the refused reply went nowhere

    const [first, second] = running.map((r) => (r.body as { session_id: string }).session_id);
    await cluster.waitDone(first ?? "");
    const reply = await call(l1, `/api/v1/sessions/${sid}/reply`, { key: KEYS.frank, json: { text: "Celsius" } });
    expect(reply.status, reply.text).toBe(202);
    expect((await cluster.waitDone(sid)).state.meta.status).toBe("completed");
    expect((await cluster.waitDone(second ?? "")).state.meta.status).toBe("completed");
  });

  test(`a body over ${MAX_BODY} bytes is 413 payload_too_large on both replicas, in each route family's shape`, async () => {
    const big = { query: `${"Why is the sky blue? ".repeat(110)}` };
    for (const base of [l1, l2]) {
      const r = await call(base, "/api/v1/query", { key: KEYS.erin, json: big });
      expect(r.status).toBe(413);
      expect(r.body).toEqual(apiError("payload_too_large", 413, `the request body is over ${MAX_BODY} bytes`));
      const o = await call(base, "/v1/chat/completions", {
        key: KEYS.erin,
        json: { model: "agentmesh/critic-chain", messages: [{ role: "user", content: big.query }] },
      });
      expect(o.status).toBe(413);
      expect(o.body).toEqual({
        error: {
          message: `the request body is over ${MAX_BODY} bytes`,
          type: "invalid_request_error",
          param: null,
          code: "payload_too_large",
        },
      });
    }
  });

  test(`streams: a key holds at most ${MAX_STREAMS} open across both replicas (429 too_many_streams), and opens at most ${OPEN_RATE} a minute`, async () => {
    // a running session that stays silent: its streams stay open until the client leaves
    const state = testSessionState("gwstreamsbound000001", 1);
    await cluster.store.create({ ...state, meta: { ...state.meta, owner: "gina", status: "running" } });
    const open = async (base: string) => {
      const stop = new AbortController();
      const res = await fetch(`${base}/api/v1/sessions/${state.meta.session_id}/events`, {
        headers: bearer(KEYS.gina),
        signal: stop.signal,
      });
      return { res, stop };
    };
    const held = [await open(l1), await open(l2), await open(l1)];
    expect(held.map((h) => h.res.status)).toEqual([200, 200, 200]);
    for (const base of [l2, l1]) {
      const { res } = await open(base);
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await res.json()).toEqual(apiError("too_many_streams", 429, /has 3 streams open, its most \(3\)/));
    }
    // one leaves: its replica gives its lease in Redis back, and another stream may open (waiting
    // on Redis, since every try to open would count against the opening rate)
    const leases = `${cluster.opts.prefix}:rl:streams:gina`;
    expect(await cluster.redisClient.zcard(leases)).toBe(MAX_STREAMS);
    held[0]!.stop.abort();
    for (let i = 0; (await cluster.redisClient.zcard(leases)) > MAX_STREAMS - 1; i++) {
      expect(i, "the lease is given back within 10 s").toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 100));
    }
    const again = await open(l2);
    expect(again.res.status).toBe(200);
    for (const h of [...held, again]) h.stop.abort();

    // the opening rate: a finished session's stream ends at once, so only the rate refuses
    const done = await startQuery(l1, KEYS.hana);
    await cluster.waitDone(done.session_id);
    const statuses: number[] = [];
    for (let i = 0; i < OPEN_RATE + 2; i++) {
      const r = await fetch(`${i % 2 ? l2 : l1}/api/v1/sessions/${done.session_id}/events`, {
        headers: bearer(KEYS.hana),
      });
      statuses.push(r.status);
      const text = await r.text(); // to the stream's end (the session's `complete`)
      if (r.status === 429) expect(JSON.parse(text)).toEqual(apiError("rate_limited", 429, /opens streams too often/));
    }
    expect(statuses).toEqual([...Array<number>(OPEN_RATE).fill(200), 429, 429]);
  });
});

describe("bad requests", () => {
  test("malformed JSON, wrong types, unknown fields, a bad Last-Event-ID and a missing key: 400/401 naming the problem, never a stack trace", async () => {
    const { session_id: sid } = await startQuery(a1, ALICE);
    const cases: Array<[string, Promise<Awaited<ReturnType<typeof call>>>, number, string, RegExp]> = [
      [
        "malformed JSON",
        call(a1, "/api/v1/query", { key: ALICE, json: '{"query": "What is CRISPR?"' }),
        400,
        "bad_request",
        /^the body is not valid JSON/,
      ],
      [
        "query: 5",
        call(a2, "/api/v1/query", { key: ALICE, json: { query: 5 } }),
        400,
        "invalid_query",
        /the query must be text/,
      ],
      [
        'budgets.max_steps: "x"',
        call(a1, "/api/v1/query", { key: ALICE, json: { query: QUESTION, budgets: { max_steps: "x" } } }),
        400,
        "bad_request",
        /budgets\.max_steps/,
      ],
      [
        "an unknown field",
        call(a2, "/api/v1/query", { key: ALICE, json: { query: QUESTION, colour: "red" } }),
        400,
        "bad_request",
        /colour/,
      ],
      [
        "an unknown workflow",
        call(a1, "/api/v1/query", { key: ALICE, json: { query: QUESTION, workflow: "nope" } }),
        400,
        "bad_request",
        /workflow/,
      ],
      [
        "messages[0].role",
        call(a2, "/api/v1/query", {
          key: ALICE,
          json: { query: QUESTION, messages: [{ role: "robot", content: "beep" }] },
        }),
        400,
        "bad_request",
        /messages\[0\]\.role/,
      ],
      [
        "reply text: 7",
        call(a1, `/api/v1/sessions/${sid}/reply`, { key: ALICE, json: { text: 7 } }),
        400,
        "bad_request",
        /text/,
      ],
      [
        "a bad Last-Event-ID",
        call(a2, `/api/v1/sessions/${sid}/events`, { key: ALICE, headers: { "last-event-id": "3-1" } }),
        400,
        "bad_request",
        /^Last-Event-ID must be <seq>:<version>:<index>/,
      ],
      [
        "no key",
        call(a1, "/api/v1/query", { json: { query: QUESTION } }),
        401,
        "unauthorized",
        /^send an API key: Authorization: Bearer <key>$/,
      ],
      [
        "an unknown key",
        call(a2, `/api/v1/sessions/${sid}`, { key: "am_nope" }),
        401,
        "unauthorized",
        /^the API key is not valid$/,
      ],
    ];
    for (const [what, pending, status, code, message] of cases) {
      const r = await pending;
      expect(r.status, what).toBe(status);
      expect(r.body, what).toEqual(apiError(code, status, message));
      expect(r.headers.get("content-type"), what).toMatch(/^application\/json/);
      expect(r.text, what).not.toMatch(STACK_TRACE);
    }
    await cluster.waitDone(sid);
  });
});

describe("threads and clarification", () => {
  test("a follow-up in a thread starts a new session that carries the earlier turns", async () => {
    const first = await startQuery(a1, ALICE);
    await cluster.waitDone(first.session_id);
    const followUp = "When was it first used in human cells?";
    const second = await startQuery(a2, ALICE, { query: followUp, thread_id: first.thread_id });
    expect(second.thread_id).toBe(first.thread_id);
    expect(second.session_id).not.toBe(first.session_id);
    const { log, state } = await cluster.waitDone(second.session_id);
    expect(state.meta.status).toBe("completed");
    expect(log[0]?.input).toMatchObject({
      kind: "start",
      query: followUp,
      messages: [
        { role: "user", content: QUESTION },
        { role: "assistant", content: await finalAnswer(first.session_id) },
      ],
    });
    const thread = await call(a1, `/api/v1/threads/${first.thread_id}`, { key: ALICE });
    expect((thread.body as { sessions: Array<{ session_id: string }> }).sessions.map((s) => s.session_id)).toEqual([
      first.session_id,
      second.session_id,
    ]);
  });

  test("a blackboard session that asks the person is answered by the next user message in its thread, over /v1/chat/completions", async () => {
    const client = openai(a2, ALICE);
    const asked = await client.chat.completions
      .create({
        model: "agentmesh/blackboard",
        messages: [{ role: "user", content: "Where does the handbook say to store samples at 4 degrees?" }],
      })
      .withResponse();
    const sid = asked.response.headers.get("x-agentmesh-session") ?? "";
    const tid = asked.response.headers.get("x-agentmesh-thread") ?? "";
    expect(asked.data.choices[0]?.message.content).toBe(
      "Your question mentions 4 degrees without a scale: is that Celsius or Fahrenheit?",
    );
    expect((await call(a1, `/api/v1/sessions/${sid}`, { key: ALICE })).body).toMatchObject({
      status: "awaiting_user",
      awaiting_user: { question: asked.data.choices[0]?.message.content },
    });

    const answered = await openai(a1, ALICE)
      .chat.completions.create({
        model: "agentmesh/blackboard",
        messages: [{ role: "user", content: "Celsius" }],
        metadata: { thread_id: tid },
      })
      .withResponse();
    expect(answered.response.headers.get("x-agentmesh-session")).toBe(sid);
    const { state } = await cluster.waitDone(sid);
    expect(state.meta.status).toBe("completed");
    const answer = await finalAnswer(sid);
    expect(answered.data.choices[0]?.message.content).toBe(answer);
    expect(answer).toContain("You clarified: “Celsius”.");
  });
});

// Last: it stops a replica.
describe("graceful shutdown", () => {
  test("SIGTERM ends a replica's open stream cleanly; the other stays ready and continues it from Last-Event-ID", async () => {
    const { session_id: sid } = await startQuery(a1, ALICE);
    const client = await openSse(`${a2}/api/v1/sessions/${sid}/events`, { headers: bearer(ALICE) });
    expect(client.res.status).toBe(200);
    const before = [await nextEvent(client), await nextEvent(client), await nextEvent(client)];
    // a /v1 answer on the same replica: it cannot resume, so it is let finish or ends with an error chunk
    const answer = await openai(a2, ALICE)
      .chat.completions.create({
        model: "agentmesh/critic-chain",
        messages: [{ role: "user", content: QUESTION }],
        stream: true,
      })
      .withResponse();
    const answerSid = answer.response.headers.get("x-agentmesh-session") ?? "";
    const answerEnd = (async () => {
      let finish: string | null = null;
      try {
        for await (const chunk of answer.data) finish = chunk.choices[0]?.finish_reason ?? finish;
        return { finish };
      } catch (err) {
        return { error: err };
      }
    })();
    a2proc.child.kill("SIGTERM");
    const rest = await readAll(client); // resolves (the server ended the stream) rather than throwing
    expect(rest.filter((m) => m.event === "error")).toEqual([]);
    const ended = await answerEnd;
    if ("error" in ended) expect(ended.error).toMatchObject({ message: expect.stringMatching(/shutting down/) });
    else expect(ended.finish).toBe("stop");
    expect(await a2proc.exited).toEqual({ code: 0, signal: null });
    // the drain did not cancel the answer's session
    expect((await cluster.waitDone(answerSid)).state.meta.status).toBe("completed");
    expect((await fetch(`${a1}/readyz`)).status).toBe(200);

    const read = [...before.flatMap((e) => (e ? [e] : [])), ...sessionEvents(rest)];
    const last = read.at(-1)!;
    const resumed = await openSse(`${a1}/api/v1/sessions/${sid}/events`, {
      headers: { ...bearer(ALICE), "last-event-id": `${last.version}:${last.index}` },
    });
    const continued = sessionEvents(await readAll(resumed));
    expect(continued.length).toBeGreaterThan(0); // the replica stopped mid-session
    const all = [...read, ...continued];
    const truth = (await cluster.waitDone(sid)).events;
    expect(tally(all, truth)).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    expect(all).toEqual(truth);
  });
});
