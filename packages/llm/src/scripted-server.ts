import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { createScriptCursor, describeEntries, streamPieces, type ScriptCursor } from "./script-cursor.js";
import { validateScript } from "./scripted.js";
import {
  embeddingInputs,
  embeddingsResponse,
  type ScriptedEmbeddingCall,
  type ScriptedEmbeddingsOptions,
} from "./scripted-embeddings.js";

/**
 * One scripted HTTP reply for a role and op. Exactly one of:
 * - `output`: an object, sent as the assistant's content (JSON);
 * - `content`: raw assistant text (a text-mode reply, or invalid JSON to exercise validation);
 * - `status`: an HTTP error response (429, 500, 400, …) with an optional body and Retry-After.
 * `delayMs` may accompany any of them and holds the response back that long. A request with
 * `stream: true` gets server-sent events: the reply in 16-character deltas (`chunkDelayMs` apart),
 * then a usage chunk when `stream_options.include_usage` asks for it and `omitUsage` is unset.
 *
 * Answers (`output`, `content`) are bound to a conversation turn of a task: per role+op the n-th
 * distinct (task id, turn) gets the n-th answer, and the same (task id, turn) asked again gets
 * the same answer, so a redelivered task replays identically. The turn is the number of
 * assistant messages in the request, so the adapter's validation retry is the task's next turn.
 * Error responses (`status`) are consumed per HTTP request: the next request of a turn that has
 * no answer yet takes it. So `[{status: 429}, {output}]` is "one 429, then the answer".
 */
export interface HttpScriptEntry {
  readonly role: string;
  readonly op: string;
  readonly output?: unknown;
  readonly content?: string;
  readonly status?: number;
  readonly body?: unknown;
  readonly retryAfterSec?: number;
  readonly delayMs?: number;
  /** Pause between streamed deltas, so a client can abort mid-stream. */
  readonly chunkDelayMs?: number;
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number };
  /** Send no usage at all, like servers that ignore `include_usage`. */
  readonly omitUsage?: boolean;
}

/** One HTTP request the server received on /v1/chat/completions. */
export interface ScriptedHttpCall {
  readonly role: string;
  readonly op: string;
  readonly taskId: string;
  /** Assistant messages in the request: 0 for a task's first exchange, 1 for its validation retry. */
  readonly turn: number;
  /** Script index answered with; null for an unexpected call or a `rejectJsonSchema` refusal. */
  readonly entry: number | null;
  /** The status the script answers with (the client may have gone before it was sent). */
  readonly status: number;
  readonly stream: boolean;
  /** `response_format.type` as sent, or null. */
  readonly responseFormat: string | null;
  /** The parsed request body, to check its shape. */
  readonly body: unknown;
}

/** Options of the scripted OpenAI-compatible server. */
export interface ScriptedServerOptions {
  readonly script: readonly HttpScriptEntry[];
  /** Loopback only: the server is a test double and must never face a network. */
  readonly host?: "127.0.0.1" | "::1" | "localhost";
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** Answer every `response_format: json_schema` request with a 400, like servers without schema support. */
  readonly rejectJsonSchema?: boolean;
  /**
   * How `POST /v1/embeddings` answers: always, with deterministic hashed bag-of-words vectors
   * (scripted-embeddings.ts), consuming no script entry.
   */
  readonly embeddings?: ScriptedEmbeddingsOptions;
}

/** A running scripted server. */
export interface ScriptedServer {
  /** The API base, ending in /v1. */
  readonly url: string;
  readonly port: number;
  readonly calls: readonly ScriptedHttpCall[];
  /** Every request on /v1/embeddings, in arrival order. */
  readonly embeddingCalls: readonly ScriptedEmbeddingCall[];
  /** Throws, listing them, if any entry was never used or any call was unexpected. */
  assertConsumed(): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

const Entry = z
  .object({
    role: z.string().min(1),
    op: z.string().min(1),
    output: z.unknown().optional(),
    content: z.string().optional(),
    status: z.number().int().min(400).max(599).optional(),
    body: z.unknown().optional(),
    retryAfterSec: z.number().nonnegative().optional(),
    delayMs: z.number().int().nonnegative().optional(),
    chunkDelayMs: z.number().int().nonnegative().optional(),
    usage: z
      .object({ prompt_tokens: z.number().int().nonnegative(), completion_tokens: z.number().int().nonnegative() })
      .partial()
      .optional(),
    omitUsage: z.boolean().optional(),
  })
  .refine(
    (e) => [e.output, e.content, e.status].filter((x) => x !== undefined).length === 1,
    "an entry has exactly one of `output`, `content`, `status`",
  );

const RequestBody = z.looseObject({
  model: z.string(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  response_format: z.looseObject({ type: z.string() }).nullish(),
});
type RequestBody = z.infer<typeof RequestBody>;

/** What a server's request handling shares: its script, what it recorded, and the timers of held replies. */
interface ServerState {
  readonly opts: ScriptedServerOptions;
  readonly cursor: ScriptCursor<HttpScriptEntry>;
  readonly calls: ScriptedHttpCall[];
  readonly embeddingCalls: ScriptedEmbeddingCall[];
  readonly unexpected: string[];
  readonly timers: Set<NodeJS.Timeout>;
  /** The last completion id's number. */
  sequence: number;
}

/** Starts a scripted OpenAI-compatible server (POST /v1/chat/completions and /v1/embeddings, GET /v1/models) on loopback. */
export async function startScriptedOpenAIServer(opts: ScriptedServerOptions): Promise<ScriptedServer> {
  const host = opts.host ?? "127.0.0.1";
  if (!LOOPBACK.has(host)) throw new Error(`startScriptedOpenAIServer: host must be loopback, got ${String(host)}`);
  validateScript(opts.script, Entry, "startScriptedOpenAIServer");
  const script = opts.script.map((e) => structuredClone(e));
  const cursor = createScriptCursor(script, (e) => e.status !== undefined);
  const st: ServerState = {
    opts,
    cursor,
    calls: [],
    embeddingCalls: [],
    unexpected: [],
    timers: new Set(),
    sequence: 0,
  };
  const { calls, unexpected, timers } = st;

  const server = createServer((req, res) => {
    handle(st, req, res).catch((err: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, apiError(`scripted server bug: ${(err as Error).message}`, "server_error"));
      else res.destroy();
    });
  });
  server.on("clientError", (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === "::1" ? "[::1]" : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    port,
    calls,
    embeddingCalls: st.embeddingCalls,
    assertConsumed() {
      const left = cursor.unconsumed();
      if (left.length === 0 && unexpected.length === 0) return;
      const parts: string[] = [];
      if (left.length > 0) parts.push(`unconsumed entries:\n${describeEntries(left)}`);
      if (unexpected.length > 0) parts.push(`unexpected calls:\n${unexpected.map((u) => `  ${u}`).join("\n")}`);
      throw new Error(`scripted server: ${parts.join("\n")}`);
    },
    close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive sockets and responses held by a delay would otherwise keep close() waiting.
        server.closeAllConnections();
      });
    },
  };
}

/** One HTTP request: the route, then the call recorded and answered from the script. */
async function handle(st: ServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === "POST" && (req.url ?? "").split("?")[0] === "/v1/embeddings") return embed(st, req, res);
  const parsed = await readChatRequest(req, res);
  if (parsed === null) return;
  const role = header(req, "x-agentmesh-role");
  const op = header(req, "x-agentmesh-op");
  const taskId = header(req, "x-agentmesh-task-id");
  const turn = parsed.messages.filter((m) => m.role === "assistant").length;
  const stream = parsed.stream === true;
  const responseFormat = parsed.response_format?.type ?? null;
  const record = (entry: number | null, status: number) =>
    st.calls.push({ role, op, taskId, turn, entry, status, stream, responseFormat, body: parsed });

  if (st.opts.rejectJsonSchema && responseFormat === "json_schema") {
    record(null, 400);
    sendJson(res, 400, {
      error: {
        message: "response_format type 'json_schema' is not supported by this server",
        type: "invalid_request_error",
        param: "response_format",
        code: null,
      },
    });
    return;
  }
  const taken = role && op && taskId ? st.cursor.take(role, op, `${taskId}\u0000${turn}`) : null;
  if (!taken) {
    const what = `${role || "?"}.${op || "?"} task ${taskId || "?"} turn ${turn}`;
    st.unexpected.push(what);
    record(null, 400);
    // A 400 that does not mention the response format: the adapter fails at once (model_refused).
    sendJson(
      res,
      400,
      apiError(
        `scripted server: unexpected call ${what} (no script entry left or x-agentmesh headers missing)`,
        "scripted_unexpected_call",
      ),
    );
    return;
  }
  // Recorded on arrival, so a test sees the call even if the client gives up during a delay.
  record(taken.index, taken.entry.status ?? 200);
  return answer(st, res, parsed, taken.entry);
}

/** POST /v1/embeddings: the deterministic vectors of its inputs, or the configured failure. */
async function embed(st: ServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await readBody(req);
  let body: unknown = null;
  try {
    body = raw === null ? null : JSON.parse(raw);
  } catch {
    // answered below as an invalid request
  }
  const parsed = embeddingInputs(body);
  if (parsed === null) {
    sendJson(
      res,
      400,
      apiError("an embeddings request needs `model` and `input` (text or texts)", "invalid_request_error"),
    );
    return;
  }
  const options = st.opts.embeddings ?? {};
  const status = options.status ?? 200;
  st.embeddingCalls.push({ model: parsed.model, inputs: parsed.inputs, status });
  if (status !== 200) sendJson(res, status, apiError(`scripted ${status}`, "server_error"));
  else sendJson(res, 200, embeddingsResponse(parsed.model, parsed.inputs, options));
}

/**
 * The chat-completions request's body; null once the request was answered instead (GET
 * /v1/models, an unknown route, a body too large or not a chat request).
 */
async function readChatRequest(req: IncomingMessage, res: ServerResponse): Promise<RequestBody | null> {
  const path = (req.url ?? "").split("?")[0];
  if (req.method === "GET" && path === "/v1/models") {
    sendJson(res, 200, {
      object: "list",
      data: [{ id: "scripted", object: "model", created: 0, owned_by: "agentmesh" }],
    });
    return null;
  }
  if (req.method !== "POST" || path !== "/v1/chat/completions") {
    sendJson(res, 404, apiError(`no route ${req.method} ${path}`, "not_found"));
    return null;
  }
  const raw = await readBody(req);
  if (raw === null) {
    sendJson(res, 413, apiError("request body too large", "invalid_request_error"));
    return null;
  }
  try {
    return RequestBody.parse(JSON.parse(raw));
  } catch (err) {
    sendJson(
      res,
      400,
      apiError(`invalid request body: ${(err as Error).message}`.slice(0, 500), "invalid_request_error"),
    );
    return null;
  }
}

/** Sends the entry's reply (after its delay): its error status, or its answer streamed or whole. */
async function answer(
  st: ServerState,
  res: ServerResponse,
  parsed: RequestBody,
  entry: HttpScriptEntry,
): Promise<void> {
  if (entry.delayMs && !(await wait(st.timers, entry.delayMs, res))) return;
  if (entry.status !== undefined) {
    const headers: Record<string, string> =
      entry.retryAfterSec !== undefined ? { "retry-after": String(entry.retryAfterSec) } : {};
    sendJson(
      res,
      entry.status,
      entry.body ?? apiError(`scripted ${entry.status}`, entry.status === 429 ? "rate_limit_exceeded" : "server_error"),
      headers,
    );
    return;
  }
  const content = entry.content ?? JSON.stringify(entry.output);
  const usage = entry.omitUsage
    ? null
    : {
        prompt_tokens: entry.usage?.prompt_tokens ?? Math.ceil(JSON.stringify(parsed.messages).length / 4),
        completion_tokens: entry.usage?.completion_tokens ?? Math.ceil(content.length / 4),
      };
  const id = `chatcmpl-scripted-${++st.sequence}`;
  if (parsed.stream === true)
    await sendStream(st.timers, res, {
      id,
      model: parsed.model,
      content,
      usage: parsed.stream_options?.include_usage === true ? usage : null,
      chunkDelayMs: entry.chunkDelayMs ?? 0,
    });
  else sendCompletion(res, id, parsed.model, content, usage);
}

/** Server-sent events as OpenAI streams them: role, content pieces, finish, usage, [DONE]. */
async function sendStream(
  timers: Set<NodeJS.Timeout>,
  res: ServerResponse,
  reply: { id: string; model: string; content: string; usage: TokenUsage | null; chunkDelayMs: number },
): Promise<void> {
  if (res.destroyed) return;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ id: reply.id, object: "chat.completion.chunk", created: 0, model: reply.model, choices, ...extra })}\n\n`,
    );
  chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]);
  for (const [i, piece] of streamPieces(reply.content).entries()) {
    // The client hung up (an abort): stop streaming.
    if (i > 0 && reply.chunkDelayMs > 0 && !(await wait(timers, reply.chunkDelayMs, res))) return;
    if (res.destroyed) return;
    chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]);
  }
  chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]);
  if (reply.usage) chunk([], { usage: usageBody(reply.usage) });
  res.end("data: [DONE]\n\n");
}

/** Resolves true after `ms`, or false as soon as the client disconnects; the timer is held in `timers` meanwhile. */
function wait(timers: Set<NodeJS.Timeout>, ms: number, res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      timers.delete(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      timers.delete(timer);
      res.off("close", onClose);
      resolve(!res.destroyed);
    }, ms);
    timers.add(timer);
    res.once("close", onClose);
  });
}

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? "";
}

/** The body as text, or null when it is over the limit. */
function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) over = true;
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(over ? null : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function apiError(message: string, type: string) {
  return { error: { message, type, param: null, code: null } };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

type TokenUsage = { prompt_tokens: number; completion_tokens: number };
const usageBody = (u: TokenUsage) => ({ ...u, total_tokens: u.prompt_tokens + u.completion_tokens });

function sendCompletion(
  res: ServerResponse,
  id: string,
  model: string,
  content: string,
  usage: TokenUsage | null,
): void {
  sendJson(res, 200, {
    id,
    object: "chat.completion",
    created: 0,
    model,
    choices: [
      { index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: "stop" },
    ],
    ...(usage ? { usage: usageBody(usage) } : {}),
  });
}
