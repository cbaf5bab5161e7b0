// Server-sent events over `fetch`, because the browser's EventSource cannot send an
// `Authorization` header or POST a question. Two parts: an incremental parser of the wire
// format (pure, fed text in arbitrary chunks) and a follower that reads one session's stream,
// reconnecting with `Last-Event-ID` after a drop so no event is missed or seen twice.

/**
 * One dispatched message. `id` is the last event id in effect when it was dispatched (the
 * spec's rule: an id persists until another `id:` line), or null when the stream set none.
 * @typedef {{ event: string, data: string, id: string | null }} SseMessage
 */

/**
 * What the parser reports: a message, or a comment line (`: ping`), which only proves the
 * connection is alive.
 * @typedef {{ kind: "message", message: SseMessage } | { kind: "comment", text: string }} SseItem
 */

/**
 * An incremental SSE parser (the WHATWG event-stream rules): lines end in CRLF, LF or CR, a
 * `data` field may repeat (joined with LF), a blank line dispatches, a message with no data is
 * dropped, and an `id` holding NUL is ignored.
 * @param {(item: SseItem) => void} emit
 * @returns {{ push(text: string): void, lastEventId(): string | null }}
 */
export function createSseParser(emit) {
  let buffer = "";
  /** A CR ended the previous chunk: a LF starting the next one belongs to it. */
  let skipLf = false;
  /** @type {string[]} */
  let data = [];
  let event = "";
  /** @type {string | null} */
  let lastId = null;

  /** @param {string} line */
  const onLine = (line) => {
    if (line === "") {
      if (data.length > 0)
        emit({ kind: "message", message: { event: event || "message", data: data.join("\n"), id: lastId } });
      data = [];
      event = "";
      return;
    }
    if (line.startsWith(":")) {
      emit({ kind: "comment", text: line.slice(1).trimStart() });
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
    else if (field === "id" && !value.includes("\0")) lastId = value;
    // `retry` and unknown fields are ignored: the follower owns its backoff.
  };

  return {
    push(text) {
      let s = text;
      if (skipLf && s.startsWith("\n")) s = s.slice(1);
      skipLf = false;
      buffer += s;
      for (;;) {
        const m = /\r\n|\n|\r/.exec(buffer);
        if (!m) break;
        // A CR at the very end may be the first half of a CRLF split across chunks.
        if (m[0] === "\r" && m.index === buffer.length - 1) skipLf = true;
        onLine(buffer.slice(0, m.index));
        buffer = buffer.slice(m.index + m[0].length);
      }
    },
    lastEventId: () => lastId,
  };
}

/**
 * Why following stopped for good: `done` (the stream saw its last event), `aborted` (the
 * caller's signal), or `refused` (the server answered 4xx: retrying cannot help).
 * @typedef {{ reason: "done" } | { reason: "aborted" } | { reason: "refused", status: number, body: string }} FollowEnd
 */

/**
 * @typedef {object} FollowOptions
 * @property {(lastEventId: string | null) => Promise<Response>} connect opens the stream;
 *   called again after a drop with the last id seen (null when none yet)
 * @property {(message: SseMessage) => void} onMessage every dispatched message, in order
 * @property {(message: SseMessage) => boolean} isLast true for the message after which the
 *   server closes the stream (a session's `complete`)
 * @property {(state: "open" | "retrying", detail?: string) => void} [onState] connection changes
 * @property {AbortSignal} [signal] stops following
 * @property {(ms: number, signal?: AbortSignal) => Promise<void>} [sleep] waits between retries
 * @property {number} [initialDelayMs] first retry delay; it doubles up to `maxDelayMs`
 * @property {number} [maxDelayMs]
 */

/**
 * Follows one stream to its last message: reads each response body through the parser and,
 * when it ends early or the request fails (network, 5xx), connects again with the last id seen
 * after an exponential backoff with jitter, reset once a connection delivers something.
 * @param {FollowOptions} opts
 * @returns {Promise<FollowEnd>}
 */
export async function followStream(opts) {
  const sleep = opts.sleep ?? delay;
  const initial = opts.initialDelayMs ?? 500;
  const max = opts.maxDelayMs ?? 10_000;
  /** @type {string | null} */
  let lastId = null;
  let finished = false;
  let failures = 0;
  while (!opts.signal?.aborted) {
    let delivered = false;
    try {
      const res = await opts.connect(lastId);
      if (res.status >= 400 && res.status < 500)
        return { reason: "refused", status: res.status, body: await res.text() };
      if (!res.ok || !res.body) throw new Error(`the server answered ${res.status}`);
      opts.onState?.("open");
      const parser = createSseParser((item) => {
        delivered = true;
        if (item.kind !== "message" || finished) return;
        if (item.message.id !== null) lastId = item.message.id;
        opts.onMessage(item.message);
        if (opts.isLast(item.message)) finished = true;
      });
      await readBody(res.body, parser, () => finished, opts.signal);
      if (finished) return { reason: "done" };
      opts.onState?.("retrying", "the stream ended early");
    } catch (err) {
      if (opts.signal?.aborted) break;
      if (finished) return { reason: "done" };
      opts.onState?.("retrying", err instanceof Error ? err.message : String(err));
    }
    failures = delivered ? 0 : failures + 1;
    const wait = Math.min(max, initial * 2 ** Math.max(0, failures - 1));
    await sleep(wait / 2 + Math.random() * (wait / 2), opts.signal);
  }
  return { reason: "aborted" };
}

/**
 * Feeds a response body to the parser until it ends, `enough()` says so, or the signal aborts.
 * @param {ReadableStream<Uint8Array>} body
 * @param {{ push(text: string): void }} parser
 * @param {() => boolean} enough
 * @param {AbortSignal | undefined} signal
 */
async function readBody(body, parser, enough, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const cancel = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
      if (enough()) {
        cancel();
        return;
      }
    }
    parser.push(decoder.decode());
  } finally {
    signal?.removeEventListener("abort", cancel);
  }
}

/**
 * @param {number} ms
 * @param {AbortSignal} [signal]
 * @returns {Promise<void>}
 */
function delay(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
