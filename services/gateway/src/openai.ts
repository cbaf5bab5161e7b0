import type { Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import {
  SessionOptions,
  ThreadId,
  WORKFLOW_OPTIONS,
  WORKFLOW_DESCRIPTIONS,
  WorkflowName,
  checkQuery,
  formatZodError,
  misplacedOption,
  type ChatMessage,
  type SessionEvent,
} from "@agentmesh/contracts";
import { answerRemainder, isAnswerToken } from "./answer-text.js";
import { ApiError, readJson } from "./http.js";
import type { Publisher } from "@agentmesh/messaging";
import { cancelAfterDisconnect, type OpenAnswers } from "./disconnect.js";
import { claimIdempotencyKey, idempotencyKeyOf } from "./idempotency.js";
import { ChatRequest, refuseUnsupported, type Message } from "./openai-request.js";
import {
  isAwaitingUser,
  liveSession,
  releaseIfStopped,
  startSession,
  startedAfter,
  type StreamDeps,
  type Started,
} from "./sessions.js";
import { sessionStream, StreamOverflow } from "./stream.js";
import { countedOnce, type StreamBounds } from "./stream-slots.js";

/** A started session with where its stream's replay begins (`startedAfter`). */
type Opened = Started & { readonly fromSeq: number | undefined };

/** Model names are `agentmesh/<workflow>`: the model a client picks is the workflow that answers. */
const MODEL_PREFIX = "agentmesh/";
const CREATED = 1_767_225_600; // a fixed date for /v1/models (OpenAI lists one per model)

/** An OpenAI error body: `{"error":{"message","type","param","code"}}`. */
export function openAiError(e: ApiError) {
  const type =
    e.status === 401
      ? "authentication_error"
      : e.status === 429
        ? "rate_limit_error"
        : e.status >= 500
          ? "server_error"
          : "invalid_request_error";
  // OpenAI's own codes where a client's SDK looks for them; the gateway's code otherwise.
  const code = e.code === "unauthorized" ? "invalid_api_key" : e.code;
  return { error: { message: e.message, type, param: e.param, code } };
}

/** The text of a message: its string, or its text parts joined (images and other parts are not read). */
const textOf = (m: Message): string =>
  typeof m.content === "string"
    ? m.content
    : (m.content ?? []).flatMap((p) => (p.type === "text" && typeof p.text === "string" ? [p.text] : [])).join("\n");

/** The workflow a model name selects, or a 404 naming the models there are. */
function workflowOf(model: string): WorkflowName {
  const name = model.startsWith(MODEL_PREFIX) ? model.slice(MODEL_PREFIX.length) : model;
  const wf = WorkflowName.safeParse(name);
  if (!wf.success)
    throw new ApiError(
      "model_not_found",
      `the model ${JSON.stringify(model.slice(0, 100))} does not exist; use one of ${WorkflowName.options.map((w) => MODEL_PREFIX + w).join(", ")}`,
    );
  return wf.data;
}

/** A metadata value as the option's own type: a list (comma-separated), a number or the text itself. */
function optionValue(option: keyof typeof WORKFLOW_OPTIONS, text: string): unknown {
  const list = () =>
    text
      .split(",")
      .map((x) => x.trim())
      .filter((x) => x !== "");
  switch (option) {
    case "capabilities":
      return list();
    case "image_attachments":
      return list().map((url) => ({ url }));
    case "retry_limit":
      return /^\d+$/.test(text.trim()) ? Number(text.trim()) : text;
    case "strategy_profile":
      return text.trim().toUpperCase();
    case "mode":
    case "depth":
    case "scenario":
    case "provider":
    case "model":
    case "tier":
      return text.trim();
  }
}

/**
 * The workflow options a request's `metadata` carries (the keys of `WORKFLOW_OPTIONS`; every other
 * key is the client's own and is left alone): checked like the API's, an option of another workflow
 * or a value the option does not take is a 400 naming it.
 */
export function metadataOptions(workflow: WorkflowName, metadata: Readonly<Record<string, string>>): SessionOptions {
  const raw: Record<string, unknown> = {};
  for (const option of Object.keys(WORKFLOW_OPTIONS) as (keyof typeof WORKFLOW_OPTIONS)[]) {
    const text = metadata[option];
    if (text !== undefined) raw[option] = optionValue(option, text);
  }
  const misplaced = misplacedOption(workflow, raw);
  if (misplaced) throw new ApiError("bad_request", `metadata: ${misplaced.message}`);
  const parsed = SessionOptions.safeParse(raw);
  if (!parsed.success) throw new ApiError("bad_request", `metadata: ${formatZodError(parsed.error)}`);
  return parsed.data;
}

/** The conversation: the last message is the question (from the user); the earlier ones are its history. */
function conversation(req: ChatRequest, workflow: WorkflowName): { query: string; history: ChatMessage[] } {
  const last = req.messages.at(-1)!;
  if (last.role !== "user")
    throw new ApiError("bad_request", `the last message must be the user's (got "${last.role}")`);
  const q = checkQuery(textOf(last), workflow);
  if (!q.ok) throw new ApiError("invalid_query", q.reason);
  const history: ChatMessage[] = [];
  for (const m of req.messages.slice(0, -1)) {
    const role = m.role === "developer" ? "system" : m.role;
    if (role === "system" || role === "user" || role === "assistant") history.push({ role, content: textOf(m) });
  }
  return { query: q.query, history };
}

/** Whether a UTF-16 code unit is the first half of a surrogate pair. */
const isHighSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff;

/** True when position `j` of `text` falls between the two halves of a surrogate pair. */
const insidePair = (text: string, j: number): boolean => {
  const after = text.charCodeAt(j);
  return isHighSurrogate(text.charCodeAt(j - 1)) && after >= 0xdc00 && after <= 0xdfff;
};

/**
 * Cuts a text into deltas of about `size` characters at word ends, so a client shows it as it
 * comes. A cut never splits a surrogate pair: every delta is valid UTF-16 (and so encodes to valid
 * UTF-8) on its own.
 */
export function deltas(text: string, size = 48): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let j = Math.min(text.length, i + Math.max(1, size));
    const space = text.lastIndexOf(" ", j);
    if (j < text.length && space > i) j = space + 1;
    if (insidePair(text, j)) j = j - 1 > i ? j - 1 : j + 1;
    out.push(text.slice(i, j));
    i = j;
  }
  return out;
}

/** A workflow as an OpenAI model object. */
const modelEntry = (w: WorkflowName) => ({
  id: MODEL_PREFIX + w,
  object: "model",
  created: CREATED,
  owned_by: "agentmesh",
  description: WORKFLOW_DESCRIPTIONS[w],
});

/** How a session's turn ended for a chat client: its final answer, or the question it asks the person. */
type Outcome = { readonly text: string; readonly status: string; readonly truncated: boolean };

/**
 * The `finish_reason` of a turn's end: `stop` for an answer or a question to the person, `length`
 * when a budget ended the session or the answer was cut to fit its event, `error` for a session
 * that failed, `cancelled` for one that was cancelled (docs/gateway.md, "Compatibility").
 */
export function finishReason(o: Pick<Outcome, "status" | "truncated">): string {
  if (o.status === "failed") return "error";
  if (o.status === "cancelled") return "cancelled";
  if (o.status === "budget_exceeded" || o.truncated) return "length";
  return "stop";
}

/** What the `/v1` routes need beyond starting sessions. */
export interface OpenAiDeps extends StreamDeps {
  /** A keep-alive comment on open streams this often (default 15 s). */
  readonly pingMs?: number;
  /** Publishes the cancel of a session whose client left. */
  readonly publisher: Pick<Publisher, "publishInbox">;
  readonly answers: OpenAnswers;
}

/**
 * Whether a client's leaving cancels its session: as `X-Agentmesh-Cancel-On-Disconnect` says (`true`
 * or `false`); without it, yes (a chat client's Stop means stop) unless the request has an
 * `Idempotency-Key`, whose client says it will retry, and a retry attaches to the run it left.
 */
function cancelsOnDisconnect(c: Context, keyed: boolean): boolean {
  const said = c.req.header("x-agentmesh-cancel-on-disconnect")?.trim().toLowerCase();
  return said === undefined || said === "" ? !keyed : said !== "false";
}

/** Mounts `GET /v1/models` and `POST /v1/chat/completions`. */
export function mountOpenAi(app: Hono<{ Variables: { owner: string } }>, d: OpenAiDeps, slots: StreamBounds): void {
  app.get("/v1/models", (c) => c.json({ object: "list", data: WorkflowName.options.map(modelEntry) }));
  // OpenAI's SDKs send the id URL-encoded (`agentmesh%2Fhalo`); curl users type its slash.
  app.get("/v1/models/:id", (c) => c.json(modelEntry(workflowOf(c.req.param("id")))));
  app.get("/v1/models/agentmesh/:workflow", (c) =>
    c.json(modelEntry(workflowOf(MODEL_PREFIX + c.req.param("workflow")))),
  );

  app.post("/v1/chat/completions", (c) =>
    countedOnce(d.limits, c.get("owner"), (reached) => chatCompletion(c, d, slots, reached)),
  );
}

/** `POST /v1/chat/completions`'s work; `reached` is called as it admits the answer (counting the request). */
async function chatCompletion(
  c: Context<{ Variables: { owner: string } }>,
  d: OpenAiDeps,
  slots: StreamBounds,
  reached: () => void,
) {
  const req = await readJson(c, ChatRequest);
  refuseUnsupported(req);
  const workflow = workflowOf(req.model);
  const { query, history } = conversation(req, workflow);
  const threadId = req.metadata?.thread_id ?? c.req.header("x-agentmesh-thread") ?? undefined;
  if (threadId !== undefined && !ThreadId.safeParse(threadId).success) {
    throw new ApiError(
      "bad_request",
      "the thread id (metadata.thread_id or X-Agentmesh-Thread) must be 8-64 of [A-Za-z0-9_-]",
    );
  }
  const options = metadataOptions(workflow, req.metadata ?? {});
  const key = idempotencyKeyOf(c);
  const taskId =
    key === undefined
      ? undefined
      : // how the answer is delivered is not part of the request: a plain try may be retried streamed
        await claimIdempotencyKey(d.limits, c.get("owner"), key, "/v1/chat/completions", {
          ...req,
          stream: undefined,
          stream_options: undefined,
        });
  // streaming or not, the answer comes from a session stream: its bounds with the session's slot, before its session
  let release: () => void = () => {};
  const admit = async (slot: string) => {
    reached();
    release = await slots.admitAnswer(c.get("owner"), slot, { streamed: true, isLive: liveSession(d.store) });
  };
  const position = d.hub.position();
  const started = await startSession(
    d,
    c.get("owner"),
    {
      query,
      workflow,
      options,
      threadId,
      taskId,
      messages: history.length ? history : undefined,
      traceparent: c.req.header("traceparent"),
    },
    admit,
  ).then(
    (st): Opened => ({ ...st, fromSeq: startedAfter(st, position) }),
    (err: unknown) => {
      release();
      throw err;
    },
  );
  c.header("X-Agentmesh-Session", started.sessionId);
  c.header("X-Agentmesh-Thread", started.threadId);
  const id = `chatcmpl-${started.sessionId}`;
  const created = Math.floor(Date.now() / 1000);
  const ids = { session_id: started.sessionId, thread_id: started.threadId };
  if (req.stream === true)
    return streamCompletion(c, d, started, release, {
      id,
      created,
      model: req.model,
      includeUsage: req.stream_options?.include_usage === true,
      ids,
    });

  return answerCompletion(c, d, started, { id, created, model: req.model, ids }).finally(release);
}

/**
 * One `/v1` answer's life: the client's leaving (`left`), the replica's drain deadline (`drained`),
 * and once it ends without an outcome, the cancel of its session when the client left first.
 */
function answerLife(c: Context, d: OpenAiDeps, sessionId: string) {
  const cancels = cancelsOnDisconnect(c, c.req.header("idempotency-key") !== undefined);
  const left = new AbortController();
  const drained = new AbortController();
  c.req.raw.signal.addEventListener("abort", () => left.abort(), { once: true });
  if (d.answers.draining) drained.abort();
  d.answers.open.add(drained);
  return {
    left,
    drained,
    signal: AbortSignal.any([left.signal, drained.signal]),
    /** Call once the answer is over, with the turn's end when it reached one. */
    async close(outcome: Outcome | null): Promise<void> {
      d.answers.open.delete(drained);
      left.abort();
      // the turn's end: the session ended (its slot is free) or waits for a person (free unless
      // a reply has taken it again since)
      if (outcome?.status === "awaiting_user") await releaseIfStopped(d, c.get("owner"), sessionId);
      else if (outcome) await d.limits.release(c.get("owner"), sessionId);
      const ended = outcome !== null;
      if (!ended && cancels && !drained.signal.aborted && !d.answers.draining)
        await cancelAfterDisconnect(d, sessionId, "a /v1 client; X-Agentmesh-Cancel-On-Disconnect: false keeps it");
    },
  };
}

/** `stream` unset: waits for the turn's end and answers one `chat.completion`. */
async function answerCompletion(c: Context, d: OpenAiDeps, started: Opened, m: Omit<StreamMeta, "includeUsage">) {
  const life = answerLife(c, d, started.sessionId);
  let outcome: Outcome | null = null;
  try {
    for await (const item of sessionStream(d.hub, started.sessionId, {
      after: started.after,
      fromSeq: started.fromSeq,
      tokens: false,
      signal: life.signal,
      bufferBytes: d.streamBufferBytes,
      buffered: d.buffered,
    })) {
      outcome = endOf(item.event);
      if (outcome) break;
    }
  } finally {
    await life.close(outcome);
  }
  if (!outcome && life.drained.signal.aborted)
    throw new ApiError(
      "unavailable",
      `this gateway is shutting down; session ${started.sessionId} goes on: GET /api/v1/sessions/${started.sessionId}`,
      { "Retry-After": "1" },
    );
  if (!outcome)
    throw new ApiError(
      "unavailable",
      "the session's events stopped before it answered; follow it with GET /api/v1/sessions/:id/events",
    );
  return c.json({
    id: m.id,
    object: "chat.completion",
    created: m.created,
    model: m.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: outcome.text, refusal: null },
        logprobs: null,
        finish_reason: finishReason(outcome),
      },
    ],
    usage: await usageOf(d, started.sessionId),
    system_fingerprint: null,
    agentmesh: { ...m.ids, status: outcome.status },
  });
}

/** The end of a turn: `complete` (the answer), or the session pausing to ask the person something. */
function endOf(e: SessionEvent): Outcome | null {
  if (e.type === "complete") return { text: e.final_answer, status: e.status, truncated: e.truncated === true };
  if (e.type === "stage" && isAwaitingUser(e))
    return { text: e.description, status: "awaiting_user", truncated: false };
  return null;
}

async function usageOf(d: StreamDeps, sessionId: string) {
  const u = (await d.store.load(sessionId))?.state.meta.usage;
  const prompt = u?.prompt_tokens ?? 0;
  const completion = u?.completion_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

interface StreamMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly includeUsage: boolean;
  readonly ids: { readonly session_id: string; readonly thread_id: string };
}

/**
 * `stream: true`: `chat.completion.chunk`s. Only the answering node's tokens go out live; when the
 * turn ends, the rest of the final answer (all of it when nothing streamed) follows as deltas, so
 * the streamed text always equals the answer. The usage chunk only when asked for.
 */
function streamCompletion(c: Context, d: OpenAiDeps, started: Opened, release: () => void, m: StreamMeta) {
  return streamSSE(c, async (s) => {
    const life = answerLife(c, d, started.sessionId);
    s.onAbort(() => life.left.abort());
    // a comment while the workflow is silent (it may be for minutes), so neither a proxy nor the
    // client's own timeout takes the quiet connection for a dead one; SSE clients skip comments
    const ping = setInterval(() => void s.write(": keep-alive\n\n").catch(() => life.left.abort()), d.pingMs ?? 15_000);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      s.writeSSE({
        data: JSON.stringify(
          chunkBody(m, { choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], agentmesh: m.ids }),
        ),
      });
    const fail = (code: string, message: string) =>
      s.writeSSE({ data: JSON.stringify({ error: { message, type: "server_error", param: null, code } }) });
    let ended: Outcome | null = null;
    try {
      await chunk({ role: "assistant", content: "" });
      const { streamed, outcome } = await forwardAnswerTokens(d, started, life.signal, (delta) =>
        chunk({ content: delta }),
      );
      ended = outcome;
      if (!outcome) {
        if (life.drained.signal.aborted)
          await fail(
            "unavailable",
            `this gateway is shutting down; the session goes on: GET /api/v1/sessions/${started.sessionId}`,
          );
        else if (!life.left.signal.aborted)
          await fail("unavailable", "the session's events stopped before it answered");
        return;
      }
      await finishStream(d, started, outcome, streamed, { chunk, fail, s, m });
    } catch (err) {
      if (!life.signal.aborted) {
        d.log.warn({ session_id: started.sessionId, err: (err as Error).message }, "chat completion stream failed");
        if (err instanceof StreamOverflow) await fail("unavailable", err.message);
      }
    } finally {
      clearInterval(ping);
      release();
      await life.close(ended);
    }
  });
}

/** A `chat.completion.chunk` with the stream's id, time and model. */
const chunkBody = (m: StreamMeta, rest: Record<string, unknown>) => ({
  id: m.id,
  object: "chat.completion.chunk",
  created: m.created,
  model: m.model,
  system_fingerprint: null,
  ...rest,
});

/**
 * The end of a stream whose turn ended: the rest of the answer, the finish chunk, the usage when
 * asked for and `[DONE]`; or, when the answer restarted after part of it was sent, an error chunk.
 */
async function finishStream(
  d: StreamDeps,
  started: Started,
  outcome: Outcome,
  streamed: string,
  w: {
    chunk: (delta: Record<string, unknown>, finish?: string | null) => Promise<void>;
    fail: (code: string, message: string) => Promise<void>;
    s: { writeSSE(m: { data: string }): Promise<void> };
    m: StreamMeta;
  },
): Promise<void> {
  const rest = answerRemainder(streamed, outcome.text, outcome.truncated);
  if (rest === null) {
    // the answering node ran again and said something else: the text sent cannot be taken back
    d.log.warn({ session_id: started.sessionId }, "the streamed answer differs from the final one");
    await w.fail(
      "answer_restarted",
      `the answer was restarted after part of it was sent; the whole answer is at GET /api/v1/sessions/${started.sessionId}`,
    );
    return;
  }
  for (const piece of deltas(rest)) await w.chunk({ content: piece });
  await w.chunk({}, finishReason(outcome));
  if (w.m.includeUsage)
    await w.s.writeSSE({
      data: JSON.stringify(chunkBody(w.m, { choices: [], usage: await usageOf(d, started.sessionId) })),
    });
  await w.s.writeSSE({ data: "[DONE]" });
}

/**
 * Follows the session with its token deltas, handing the answering node's ones to `send`, until the
 * turn ends: what was sent, and how the turn ended (null when the events stopped first).
 */
async function forwardAnswerTokens(
  d: StreamDeps,
  started: Opened,
  signal: AbortSignal,
  send: (delta: string) => Promise<void>,
): Promise<{ streamed: string; outcome: Outcome | null }> {
  let streamed = "";
  // a delta ending in the first half of a surrogate pair keeps it back for the next one, so every
  // delta sent is valid text on its own; one kept when the turn ends comes with the answer's rest
  let held = "";
  let outcome: Outcome | null = null;
  for await (const item of sessionStream(d.hub, started.sessionId, {
    after: started.after,
    fromSeq: started.fromSeq,
    tokens: true,
    signal,
    bufferBytes: d.streamBufferBytes,
    buffered: d.buffered,
  })) {
    if (item.kind === "token") {
      if (!isAnswerToken(item.event)) continue;
      const text = held + item.event.delta;
      const cut = isHighSurrogate(text.charCodeAt(text.length - 1)) ? text.length - 1 : text.length;
      held = text.slice(cut);
      if (cut > 0) {
        streamed += text.slice(0, cut);
        await send(text.slice(0, cut));
      }
      continue;
    }
    outcome = endOf(item.event);
    if (outcome) break;
  }
  return { streamed, outcome };
}
