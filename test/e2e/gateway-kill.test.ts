import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { conversationTurn, type SessionEvent } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import type { Cluster, Proc } from "./harness.js";
import {
  call,
  nextEvent,
  openSse,
  readAll,
  sessionEvents,
  startCriticChainGateways,
  type CriticChainGateways,
} from "./gateway-kit.js";

// A gateway replica SIGKILLed while it serves an `/api` event stream and a `/v1` answer: no
// drain, no error chunk, the sockets just close. The sessions run on (a dead replica cancels
// nothing), the event stream resumes on the other replica from the last id it received, and the
// `/v1` client's retry with its Idempotency-Key gets the same session's whole answer there.

const ALICE = generateApiKey();
const QUESTION = "What is CRISPR and who invented it?";

let setup: CriticChainGateways;
let cluster: Cluster;
let a1: string, a2: string;
let a2proc: Proc;

beforeAll(async () => {
  setup = await startCriticChainGateways({
    prefix: "gwk",
    sessions: 10,
    delayMs: 150,
    gatewayEnv: { AGENTMESH_API_KEYS: apiKeyEntry("alice", ALICE) },
  });
  cluster = setup.cluster;
  [a1, a2] = setup.urls;
  a2proc = setup.second;
}, 180_000);

afterAll(async () => {
  await setup?.close();
});

const bearer = { authorization: `Bearer ${ALICE}` };

describe("a gateway replica killed mid-stream", () => {
  test("SIGKILL: the event stream resumes on the other replica exactly after its last id; the /v1 retry with its key gets the same session's whole answer", async () => {
    // an /api session streamed from the replica about to die
    const started = await call(a1, "/api/v1/query", { key: ALICE, json: { query: QUESTION } });
    expect(started.status).toBe(202);
    const sid = (started.body as { session_id: string }).session_id;
    const sse = await openSse(`${a2}/api/v1/sessions/${sid}/events`, { headers: bearer });
    expect(sse.res.status).toBe(200);
    const read: SessionEvent[] = [];
    for (let i = 0; i < 3; i++) read.push((await nextEvent(sse))!);

    // and a /v1 answer on it, with a key, its first chunk read
    const thread = `kill-${Date.now().toString(36)}`;
    const headers = { "Idempotency-Key": `kill-${thread}` };
    const ask = {
      model: "agentmesh/critic-chain",
      messages: [{ role: "user" as const, content: QUESTION }],
      metadata: { thread_id: thread },
      stream: true as const,
    };
    const client = (base: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: ALICE, maxRetries: 0 });
    const answer = await client(a2).chat.completions.create(ask, { headers });
    const it = answer[Symbol.asyncIterator]();
    expect((await it.next()).value?.choices[0]?.delta.role).toBe("assistant");

    a2proc.child.kill("SIGKILL");
    expect(await a2proc.exited).toEqual({ code: null, signal: "SIGKILL" });
    // both clients see their connection fail, not a clean end
    await expect(readAll(sse)).rejects.toThrow();
    await expect(
      (async () => {
        for (let c = await it.next(); !c.done; c = await it.next());
      })(),
    ).rejects.toBeInstanceOf(Error);

    // the event stream resumes on the other replica from the last id received
    const last = read.at(-1)!;
    const resumed = await openSse(`${a1}/api/v1/sessions/${sid}/events`, {
      headers: { ...bearer, "last-event-id": `${last.version}:${last.index}` },
    });
    const all = [...read, ...sessionEvents(await readAll(resumed))];
    const done = await cluster.waitDone(sid);
    expect(done.state.meta.status).toBe("completed");
    expect(all).toEqual(done.events);

    // the /v1 client retries on the other replica with its key: the same session, its whole answer
    const retry = await client(a1).chat.completions.create(ask, { headers }).withResponse();
    const answerSid = retry.response.headers.get("x-agentmesh-session") ?? "";
    let text = "";
    for await (const chunk of retry.data) text += chunk.choices[0]?.delta.content ?? "";
    const stored = await cluster.store.load(answerSid);
    expect(stored?.state.meta.status).toBe("completed"); // the dead replica cancelled nothing
    expect(text).toBe(stored ? conversationTurn(stored.state).answer : null);
    expect((await cluster.store.loadThread(thread))?.sessions).toEqual([answerSid]);
  });
});
