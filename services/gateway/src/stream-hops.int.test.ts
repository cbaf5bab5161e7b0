import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { naming as makeNaming, type Naming } from "@agentmesh/contracts";
import { connectNats, createPublisher, type Publisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import {
  completeEvent,
  readHop,
  sseReader,
  stageEvent,
  startTestGateway,
  tokenEvent,
  type SseMessage,
  type TestGateway,
} from "./test-support.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";

// Two gateway replicas, each on its own NATS connection (its own feed), and a client that hangs
// up every few messages while an answer streams and comes back on the other replica with the last
// id it received: the text and the events each arrive once, in order.

const conns: NatsConnection[] = [];
let n: Naming;
let replicas: TestGateway[];
let pub: Publisher;

beforeAll(async () => {
  for (const name of ["gateway-hops-a", "gateway-hops-b", "gateway-hops-agent"])
    conns.push(await connectNats({ url: inject("natsUrl"), name }));
  n = makeNaming(uniquePrefix("gwh"));
  await provisionTestStreams(conns[0]!, n, 600_000);
  replicas = [await startTestGateway(conns[0]!, n), await startTestGateway(conns[1]!, n)];
  pub = createPublisher(conns[2]!, n, createLogger({ service: "test", level: "silent" }));
});

afterAll(async () => {
  for (const r of replicas ?? []) await r.close();
  await deleteTestStreams(conns[0]!, n);
  for (const c of conns) await c.drain();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The answer the writer streams: words with multi-unit characters among them, so cuts land everywhere. */
const WORDS = ["agents", "naïve", "🚀", "NATS", "流式", "tokens", "é", "👩‍💻", "replay"];
const answerText = (pieces: number) => Array.from({ length: pieces }, (_, i) => `${WORDS[i % WORDS.length]} `).join("");

/** Streams `text` as the answering op's tokens, a stage event between every 60 of them, then `complete`. */
async function speak(sid: string, text: string): Promise<void> {
  const pieces = text.match(/\S+ /gu) ?? [];
  let offset = 0;
  let version = 1;
  await pub.publishEvent(stageEvent(sid, version++));
  for (const [i, delta] of pieces.entries()) {
    if (i > 0 && i % 60 === 0) await pub.publishEvent(stageEvent(sid, version++));
    void pub.publishTokens(tokenEvent(sid, { offset, delta, seq: i }));
    offset += delta.length;
    if (i % 4 === 3) await sleep(2);
  }
  await pub.publishEvent(completeEvent(sid, version, text, "streamed"));
}

describe("forced disconnects across two replicas while an answer streams", () => {
  it("≥ 200 hang-ups, each resumed on the other replica from the last id: the text and the events each arrive once, in order", async () => {
    const sid = "gwhopsession00001";
    for (const r of replicas) await r.own(sid);
    const text = answerText(720);
    const speaking = speak(sid, text);
    const got: SseMessage[] = [];
    let hops = 0;
    for (let done = false; !done; hops++) {
      const r = replicas[hops % 2]!;
      const ac = new AbortController();
      const lastId = got.findLast((m) => m.id !== null)?.id;
      const res = await fetch(`${r.url}/api/v1/sessions/${sid}/events`, {
        headers: { authorization: `Bearer ${r.key}`, ...(lastId ? { "last-event-id": lastId } : {}) },
        signal: ac.signal,
      });
      expect(res.status).toBe(200);
      const reader = sseReader(res);
      done = await readHop(reader, 1 + (hops % 3), got);
      ac.abort();
      await reader.cancel();
    }
    await speaking;
    expect(hops).toBeGreaterThanOrEqual(200);
    const streamed = got
      .filter((m) => m.event === "token")
      .map((m) => (JSON.parse(m.data) as { delta: string }).delta)
      .join("");
    expect(streamed).toBe(text);
    const events = got.filter((m) => m.event !== "token");
    expect(events.map((m) => m.event)).toEqual([...Array.from({ length: 12 }, () => "stage"), "complete"]);
    expect(events.map((m) => (JSON.parse(m.data) as { version: number }).version)).toEqual(
      Array.from({ length: 13 }, (_, i) => i + 1),
    );
    // each id names a later position than the one before it; no `replace`: what streamed is the answer
    const seqs = got.map((m) => Number(m.id?.split(":")[0]));
    expect(seqs.every((s, i) => i === 0 || s > seqs[i - 1]!)).toBe(true);
    expect(got.some((m) => m.event === "replace")).toBe(false);
  }, 120_000);
});
