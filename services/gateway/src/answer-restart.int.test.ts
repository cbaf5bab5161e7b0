import { ChatOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  SCHEMA_VERSION,
  naming as makeNaming,
  newSessionId,
  type Naming,
  type SessionEvent,
} from "@agentmesh/contracts";
import { connectNats, createPublisher, type Publisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";
import { sseReader, startTestGateway, type SseMessage, type TestGateway } from "./test-support.js";

// The answering node's streamed text against the final answer, over a real NATS with a gateway on a
// port: this test plays the coordinator (it accepts each submit and publishes the session's tokens
// and its end), so it can make an answer that restarts, or cut one at any place.

let nc: NatsConnection;
let n: Naming;
let gateway: TestGateway;
let pub: Publisher;
let submits: Subscription;
/** The sessions submitted, in order, as the gateway proposed them. */
const submitted: string[] = [];
const waiters: Array<(sid: string) => void> = [];

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-answer-test" });
  n = makeNaming(uniquePrefix("gwr"));
  await provisionTestStreams(nc, n, 600_000);
  pub = createPublisher(nc, n, createLogger({ service: "test", level: "silent" }));
  submits = nc.subscribe(n.submit, {
    callback: (_err, m) => {
      const req = m.json<{ session_id: string; thread_id: string }>();
      submitted.push(req.session_id);
      m.respond(
        JSON.stringify({
          v: SCHEMA_VERSION,
          ok: true,
          session_id: req.session_id,
          created: true,
          thread_id: req.thread_id,
          replied: false,
        }),
      );
      waiters.shift()?.(req.session_id);
    },
  });
  gateway = await startTestGateway(nc, n);
});

afterAll(async () => {
  submits.unsubscribe();
  await gateway.close();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

const at = (sid: string, version: number, index: number) => ({
  v: SCHEMA_VERSION,
  session_id: sid,
  version,
  index,
  timestamp: Date.now(),
});

/** An answering node's delta (the supervisor's chat agent), of task attempt `attempt`. */
const token = (sid: string, delta: string, seq: number, attempt = 0): Extract<SessionEvent, { type: "token" }> => ({
  ...at(sid, 1, 0),
  type: "token",
  task_id: `${sid}.1.0.${attempt}`,
  delta,
  role: "chat",
  op: "respond",
  attempt,
  seq,
});

const complete = (sid: string, answer: string): SessionEvent => ({
  ...at(sid, 2, 0),
  type: "complete",
  status: "completed",
  final_answer: answer,
  final_reasoning_trace: "",
});

/** Publishes the tokens, then (after they reached the gateway's feed) the session's end. */
async function answer(sid: string, deltas: readonly string[], final: string, attempt = 0): Promise<void> {
  for (const [i, d] of deltas.entries()) await pub.publishTokens(token(sid, d, i, attempt));
  await new Promise((r) => setTimeout(r, 100));
  await pub.publishEvent(complete(sid, final));
}

/** Waits until the hub's streams listening number `count` (a token published before its stream listens is not for it). */
async function listeners(count: (n: number) => boolean): Promise<void> {
  const until = Date.now() + 5000;
  while (!count(gateway.hub.stats().listeners)) {
    if (Date.now() > until) throw new Error(`the hub has ${gateway.hub.stats().listeners} listeners`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("a restarted answer", () => {
  it("/api: a `replace` event with the whole answer comes before `complete` when the answer restarted, none when it did not", async () => {
    const seen = async (deltas: string[], final: string) => {
      await listeners((l) => l === 0);
      const sid = newSessionId();
      await gateway.own(sid);
      const res = await fetch(`${gateway.url}/api/v1/sessions/${sid}/events`, {
        headers: { authorization: `Bearer ${gateway.key}` },
        signal: AbortSignal.timeout(10_000),
      });
      expect(res.status).toBe(200);
      const reader = sseReader(res);
      await listeners((l) => l > 0);
      // the first attempt streamed its text, then its node ran again and answered otherwise
      const done = answer(sid, deltas, final);
      const out: SseMessage[] = [];
      for (let m = await reader.next(); m !== null; m = await reader.next()) out.push(m);
      await done;
      return out.map((m) => [m.event, m.event === "token" ? JSON.parse(m.data).delta : JSON.parse(m.data)]);
    };
    const restarted = await seen(["The first ", "try"], "The second answer");
    expect(restarted.map(([e]) => e)).toEqual(["token", "token", "replace", "complete"]);
    expect(restarted[2]?.[1]).toMatchObject({ reason: "answer_restarted", text: "The second answer" });
    const steady = await seen(["The ans", "wer"], "The answer.");
    expect(steady.map(([e]) => e)).toEqual(["token", "token", "complete"]);
  });

  it("/v1: the stream ends with an error chunk `answer_restarted`, no finish chunk, the text sent never taken back", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: gateway.key, maxRetries: 0 });
    await listeners((l) => l === 0);
    const started = new Promise<string>((r) => waiters.push(r));
    const stream = await client.chat.completions.create({
      model: "agentmesh/supervisor",
      messages: [{ role: "user", content: "Say something" }],
      stream: true,
    });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next(); // the role chunk: the stream follows the session now
    expect(first.value?.choices[0]?.delta.role).toBe("assistant");
    await listeners((l) => l > 0);
    void answer(await started, ["The first ", "try"], "The second answer");
    let text = "";
    const err = await (async () => {
      for (let c = await it.next(); !c.done; c = await it.next()) {
        text += c.value.choices[0]?.delta.content ?? "";
        expect(c.value.choices[0]?.finish_reason ?? null).toBeNull();
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ code: "answer_restarted" });
    expect(text).toBe("The first try");
  });
});

/** Half of a surrogate pair without its other half: text a strict UTF-8 encoder cannot encode. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("an answer with 4-byte characters, its streamed part cut at every offset", () => {
  const ANSWER = "ok 😀 👍🏽 🇫🇷 done";

  it("every /v1 delta is well-formed text and together they are the answer", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: gateway.key, maxRetries: 0 });
    for (let cut = 0; cut <= ANSWER.length; cut++) {
      // the node's stream breaks at `cut` (possibly between a pair's halves), and again inside its rest
      const head = ANSWER.slice(0, cut);
      const deltas = [head.slice(0, Math.ceil(cut / 2)), head.slice(Math.ceil(cut / 2))].filter((d) => d !== "");
      await listeners((l) => l === 0);
      const started = new Promise<string>((r) => waiters.push(r));
      const stream = await client.chat.completions.create({
        model: "agentmesh/supervisor",
        messages: [{ role: "user", content: "Emoji, please" }],
        stream: true,
      });
      const it = stream[Symbol.asyncIterator]();
      await it.next();
      await listeners((l) => l > 0);
      void answer(await started, deltas, ANSWER);
      const pieces: string[] = [];
      for (let c = await it.next(); !c.done; c = await it.next()) {
        const piece = c.value.choices[0]?.delta.content;
        if (piece) pieces.push(piece);
      }
      for (const p of pieces) expect(LONE_SURROGATE.test(p), `cut ${cut}: ${JSON.stringify(p)}`).toBe(false);
      expect(pieces.join(""), `cut ${cut}`).toBe(ANSWER);
    }
  });
});

describe("the same answer through LangChain's ChatOpenAI, cut at every offset", () => {
  const ANSWER = "ok 😀 👍🏽 🇫🇷 done";

  it("every streamed chunk is well-formed text and together they are the answer", async () => {
    const model = new ChatOpenAI({
      model: "agentmesh/supervisor",
      apiKey: gateway.key,
      maxRetries: 0,
      configuration: { baseURL: `${gateway.url}/v1` },
    });
    for (let cut = 0; cut <= ANSWER.length; cut++) {
      const head = ANSWER.slice(0, cut);
      const deltas = [head.slice(0, Math.ceil(cut / 2)), head.slice(Math.ceil(cut / 2))].filter((d) => d !== "");
      await listeners((l) => l === 0);
      const started = new Promise<string>((r) => waiters.push(r));
      const it = (await model.stream("Emoji, please"))[Symbol.asyncIterator]();
      const first = it.next(); // sends the request; its first chunk comes once the stream follows the session
      const sid = await started;
      await listeners((l) => l > 0);
      void answer(sid, deltas, ANSWER);
      const pieces: string[] = [];
      for (let c = await first; !c.done; c = await it.next()) {
        const piece = String(c.value.content);
        if (piece) pieces.push(piece);
      }
      for (const p of pieces) expect(LONE_SURROGATE.test(p), `cut ${cut}: ${JSON.stringify(p)}`).toBe(false);
      expect(pieces.join(""), `cut ${cut}`).toBe(ANSWER);
    }
  });
});
