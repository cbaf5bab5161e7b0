import { describe, expect, test } from "vitest";
import { createSseParser, followStream, type SseItem, type SseMessage } from "../public/sse.js";

// The web page's SSE parser and follower (services/gateway/public/sse.js), in Node: the same
// module the browser loads, fed by hand-made chunks and fake fetch responses.

function parseAll(chunks: readonly string[]): SseItem[] {
  const items: SseItem[] = [];
  const parser = createSseParser((i) => items.push(i));
  for (const c of chunks) parser.push(c);
  return items;
}

const messages = (items: readonly SseItem[]): SseMessage[] =>
  items.flatMap((i) => (i.kind === "message" ? [i.message] : []));

const STREAM = [
  ": ping",
  "event: session",
  'data: {"session_id":"s1"}',
  "",
  "id: 1:0",
  "event: stage",
  'data: {"type":"stage","version":1,"index":0}',
  "",
  "event: token",
  'data: {"type":"token","delta":"Hel"}',
  "",
  "id: 2:0",
  "event: complete",
  "data: line one",
  "data:line two",
  "data: ",
  "",
  "",
].join("\n");

describe("SSE parser", () => {
  test("reads events, ids, multi-line data and comments", () => {
    const items = parseAll([STREAM]);
    expect(items[0]).toEqual({ kind: "comment", text: "ping" });
    expect(messages(items)).toEqual([
      { event: "session", data: '{"session_id":"s1"}', id: null },
      { event: "stage", data: '{"type":"stage","version":1,"index":0}', id: "1:0" },
      // a message without `id:` keeps the last id (the spec's rule); token deltas carry none of their own
      { event: "token", data: '{"type":"token","delta":"Hel"}', id: "1:0" },
      { event: "complete", data: "line one\nline two\n", id: "2:0" },
    ]);
  });

  test("gives the same messages however the text is split into chunks, even mid-line and mid-CRLF", () => {
    const whole = parseAll([STREAM]);
    const crlf = STREAM.replaceAll("\n", "\r\n");
    for (const text of [STREAM, crlf]) {
      for (let cut = 0; cut <= text.length; cut++) {
        expect(parseAll([text.slice(0, cut), text.slice(cut)]), `cut at ${cut}`).toEqual(whole);
      }
      expect(parseAll([...text]), "one character per chunk").toEqual(whole);
    }
  });

  test("treats a lone CR as a line end, drops a message with no data, ignores an id holding NUL and unknown fields", () => {
    const items = parseAll([
      "id: 5:1\revent: x\r\r",
      "event: y\nretry: 10\nfoo: bar\n\n",
      "id: bad\0id\ndata: z\n\n",
      "data\n\n",
    ]);
    expect(messages(items)).toEqual([
      { event: "message", data: "z", id: "5:1" },
      { event: "message", data: "", id: "5:1" },
    ]);
  });

  test("does not dispatch a message whose blank line has not arrived", () => {
    expect(messages(parseAll(["id: 1:0\ndata: half"]))).toEqual([]);
  });
});

/** A fake `fetch` response whose body delivers `chunks`, then ends (or fails with `error`). */
function sse(chunks: readonly string[], error?: Error): Response {
  const enc = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[i++];
      if (next !== undefined) c.enqueue(enc.encode(next));
      else if (error) c.error(error);
      else c.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

const ev = (id: string, type: string) => `id: ${id}\nevent: ${type}\ndata: {"type":"${type}","id":"${id}"}\n\n`;

describe("followStream", () => {
  test("reconnects after a drop with the last id seen, backing off, and stops after the last message", async () => {
    const asked: Array<string | null> = [];
    const waits: number[] = [];
    const responses: Array<() => Promise<Response>> = [
      async () => sse([ev("1:0", "stage"), ev("1:1", "step").slice(0, 20)], new Error("network dropped")),
      async () => {
        throw new Error("connection refused");
      },
      async () => new Response("busy", { status: 503 }),
      async () => sse([": ping\n\n", ev("1:1", "step"), ev("2:0", "complete"), ev("3:0", "stage")]),
    ];
    const got: string[] = [];
    const end = await followStream({
      connect: (last) => {
        asked.push(last);
        const next = responses.shift();
        if (!next) throw new Error("connected once too often");
        return next();
      },
      onMessage: (m) => got.push(`${m.id} ${m.event}`),
      isLast: (m) => m.event === "complete",
      sleep: async (ms) => {
        waits.push(ms);
      },
      initialDelayMs: 100,
      maxDelayMs: 1000,
    });
    expect(end).toEqual({ reason: "done" });
    expect(asked).toEqual([null, "1:0", "1:0", "1:0"]);
    expect(got).toEqual(["1:0 stage", "1:1 step", "2:0 complete"]);
    // the first connection delivered (reset), then two failures in a row: the delay doubles; jitter keeps each in [d/2, d]
    expect(waits).toHaveLength(3);
    expect(waits[0]).toBeGreaterThanOrEqual(50);
    expect(waits[0]).toBeLessThanOrEqual(100);
    expect(waits[1]).toBeGreaterThanOrEqual(50);
    expect(waits[1]).toBeLessThanOrEqual(100);
    expect(waits[2]).toBeGreaterThanOrEqual(100);
    expect(waits[2]).toBeLessThanOrEqual(200);
  });

  test("a stream that ends cleanly before its last message is followed again", async () => {
    const asked: Array<string | null> = [];
    const bodies = [[ev("1:0", "stage")], [ev("1:1", "complete")]];
    const end = await followStream({
      connect: async (last) => {
        asked.push(last);
        return sse(bodies.shift() ?? []);
      },
      onMessage: () => {},
      isLast: (m) => m.event === "complete",
      sleep: async () => {},
    });
    expect(end.reason).toBe("done");
    expect(asked).toEqual([null, "1:0"]);
  });

  test("stops at a 4xx answer: retrying cannot help", async () => {
    let calls = 0;
    const end = await followStream({
      connect: async () => {
        calls++;
        return new Response('{"error":{"code":"not_found"}}', { status: 404 });
      },
      onMessage: () => {},
      isLast: () => false,
      sleep: async () => {},
    });
    expect(end).toEqual({ reason: "refused", status: 404, body: '{"error":{"code":"not_found"}}' });
    expect(calls).toBe(1);
  });

  test("stops when the caller aborts, also while a body is being read", async () => {
    const ac = new AbortController();
    const never = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(ev("1:0", "stage")));
      },
    });
    const got: string[] = [];
    const end = await followStream({
      connect: async () => new Response(never, { status: 200 }),
      onMessage: (m) => {
        got.push(m.event);
        ac.abort();
      },
      isLast: () => false,
      signal: ac.signal,
    });
    expect(end).toEqual({ reason: "aborted" });
    expect(got).toEqual(["stage"]);
  });
});
