import type { Metrics } from "@agentmesh/service-kit";
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import { z } from "zod";
import {
  Attachments,
  Budgets,
  Capability,
  ChatMessage,
  ImageAttachment,
  LIMITS,
  MAX_IMAGE_ATTACHMENTS,
  ModelProvider,
  ResearchDepth,
  ResearchScenario,
  SCHEMA_VERSION,
  StrategyProfile,
  SupervisorAgent,
  ThreadId,
  Tier,
  WORKFLOW_DESCRIPTIONS,
  WorkflowName,
  checkQuery,
  inputIds,
  newUserInputId,
  misplacedOption,
  type SessionOptions,
  type SessionEvent,
} from "@agentmesh/contracts";
import type { Publisher } from "@agentmesh/messaging";
import { ANONYMOUS_OWNER, presentedApiKey, type ApiKeyVerifier } from "./api-keys.js";
import { cancelAfterDisconnect, drainAnswers, openAnswers } from "./disconnect.js";
import { ApiError, errorBody, readJson } from "./http.js";
import { mountHttpPolicy, type HttpPolicy } from "./http-policy.js";
import { mountOpenAi, openAiError } from "./openai.js";
import {
  isAwaitingUser,
  liveSession,
  ownedSession,
  releaseIfStopped,
  sessionSummary,
  startSession,
  startedAfter,
  takeSessionSlot,
  type SessionDeps,
  type StreamDeps,
} from "./sessions.js";
import { answerRemainder, isAnswerToken } from "./answer-text.js";
import { claimIdempotencyKey, idempotencyKeyOf } from "./idempotency.js";
import { createEventHub, type EventHub } from "./fanout.js";
import { mountHttpMetrics } from "./http-metrics.js";
import {
  eventId,
  parseEventId,
  sessionStream,
  StreamOverflow,
  type BufferedTotal,
  type EventCursor,
} from "./stream.js";
import { mountStatic } from "./static.js";
import {
  countedOnce,
  createStreamBounds,
  limitRefusal,
  DEFAULT_MAX_OPEN_STREAMS,
  STREAM_HEARTBEAT_MS,
  type StreamBounds,
} from "./stream-slots.js";

/** Everything the HTTP app needs; built by main from config and connections. */
export interface GatewayDeps extends SessionDeps {
  /** Publishes replies and cancels under the `client` sender. */
  readonly publisher: Pick<Publisher, "publishInbox">;
  readonly keys: ApiKeyVerifier;
  readonly anonymous: boolean;
  readonly defaultWorkflow: WorkflowName;
  readonly maxBodyBytes: number;
  /** Host check of anonymous mode and CORS (defaults: loopback names, no origin). */
  readonly http?: Partial<Omit<HttpPolicy, "anonymous">>;
  /** NATS and Redis answer (for /readyz). */
  readonly ready: () => Promise<boolean>;
  /** A keep-alive comment on open streams this often (default 15 s). */
  readonly pingMs?: number;
  /** Where the HTTP metrics go (requests, durations, open streams, buffered bytes); none when absent. */
  readonly metrics?: Metrics | undefined;
  /** The replica's live events and replays; default: one started on `nc` at the first stream. */
  readonly hub?: EventHub;
  /** Bytes an open stream holds for a client that does not read, at most (default 1 MiB). */
  readonly streamBufferBytes?: number;
  /** Streams this replica serves at once; one more is a 503 with Retry-After (default 2,000). */
  readonly maxOpenStreams?: number;
  /** How often the replica renews its streams' leases (default 10 s: a third of their 30 s life). */
  readonly streamHeartbeatMs?: number;
}

type Env = { Variables: { owner: string } };

/** The body of `POST /api/v1/query` (parameters, plus threads and budgets); a workflow's own options are those of `WORKFLOW_OPTIONS`. */
const QueryBody = z
  .object({
    query: z.unknown(),
    workflow: WorkflowName.optional(),
    mode: SupervisorAgent.optional(),
    task_id: z.string().min(1).max(128).optional(),
    messages: z.array(ChatMessage).max(1000).optional(),
    depth: ResearchDepth.optional(),
    scenario: ResearchScenario.optional(),
    /** supervisor: the request's metadata (recorded in the session). */
    provider: ModelProvider.optional(),
    model: z.string().min(1).max(200).optional(),
    tier: Tier.optional(),
    image_attachments: z.array(ImageAttachment).max(MAX_IMAGE_ATTACHMENTS).optional(),
    thread_id: ThreadId.optional(),
    budgets: Budgets.partial().strict().optional(),
    retry_limit: z.number().int().min(1).max(20).optional(),
    strategy_profile: StrategyProfile.optional(),
    /** halo: the specialists to ask, bypassing its planner (override). */
    capabilities: z.array(Capability).min(1).max(Capability.options.length).optional(),
    /** supervisor: text files given with the query (CSV, JSON or plain text); the data agent takes its data from them first. */
    attachments: Attachments.optional(),
    /** Cancel the session when this stream's client goes away before it ends (default: it runs on; reconnect to follow it). */
    cancel_on_disconnect: z.boolean().optional(),
  })
  .strict();

const ReplyBody = z.object({ text: z.string().trim().min(1, "the reply is empty").max(LIMITS.queryMaxChars) }).strict();
const CancelBody = z.object({ reason: z.string().max(500).optional() }).strict();

/** The running app and how to end it: open streams close cleanly, so clients reconnect elsewhere. */
export interface GatewayApp {
  readonly app: Hono<Env>;
  /**
   * Stops taking requests (`/readyz` fails) and ends every open `/api` stream (its client resumes
   * on another replica from its last event id). `/v1` answers, which cannot resume, go on until
   * `graceMs` (less a moment to send their last chunk), then end with an error chunk.
   */
  drain(graceMs?: number): void;
  /** Streams open now. */
  openStreams(): number;
  /** `/v1` answers open now (streamed or not). */
  openAnswers(): number;
  /** Ends the hub's feed (after drain): deletes its consumer. */
  close(): Promise<void>;
}

/** What the app's routes share: the dependencies, the open streams and whether the gateway is draining. */
interface AppState {
  readonly d: GatewayDeps & StreamDeps;
  /** One controller per open stream; drain aborts them all. */
  readonly streams: Set<AbortController>;
  /** The bounds on open streams (taken before a session starts, given back when its stream ends). */
  readonly slots: StreamBounds;
  draining: boolean;
}

/** Builds the gateway's HTTP app: `/api/v1`, the OpenAI-compatible `/v1`, health, and the web page. */
export function createGatewayApp(d: GatewayDeps): GatewayApp {
  const app = new Hono<Env>();
  const hub = d.hub ?? createEventHub(d.nc, d.naming, d.log);
  const slots = createStreamBounds({
    limits: d.limits,
    maxOpenStreams: d.maxOpenStreams ?? DEFAULT_MAX_OPEN_STREAMS,
    heartbeatMs: d.streamHeartbeatMs ?? STREAM_HEARTBEAT_MS,
    log: d.log,
  });
  const buffered: BufferedTotal = { bytes: 0 };
  const st: AppState = { d: { ...d, hub, buffered }, streams: new Set(), slots, draining: false };
  const answers = openAnswers();
  const unsample = d.metrics
    ? mountHttpMetrics(app, d.metrics, {
        apiStreams: () => st.streams.size,
        v1Answers: () => answers.open.size,
        buffered,
      })
    : () => {};
  mountErrors(app, d);
  mountHttpPolicy(app, {
    anonymous: d.anonymous,
    allowedHosts: d.http?.allowedHosts ?? [],
    corsOrigins: d.http?.corsOrigins ?? [],
  });
  mountHealth(app, st);
  mountAuth(app, st);
  mountQuery(app, st);
  mountSessionRoutes(app, st);
  mountThreadsAndWorkflows(app, d);
  mountOpenAi(app, { ...st.d, answers }, slots);
  mountStatic(app);

  return {
    app,
    drain(graceMs = 0) {
      st.draining = true;
      for (const s of st.streams) s.abort();
      drainAnswers(answers, Math.max(0, graceMs - 1500));
    },
    openStreams: () => st.streams.size,
    openAnswers: () => answers.open.size,
    close: () => {
      unsample();
      slots.stop();
      return hub.stop();
    },
  };
}

/** Errors as JSON: OpenAI's shape under `/v1/`, ours elsewhere; an unexpected one is logged, not shown. */
function mountErrors(app: Hono<Env>, d: GatewayDeps): void {
  app.onError((err, c) => {
    const e = err instanceof ApiError ? err : null;
    if (!e) d.log.error({ err: err.message, path: c.req.path }, "request failed");
    const out = e ?? new ApiError("internal", "something went wrong on our side; it has been logged");
    if (c.req.path.startsWith("/v1/")) return c.json(openAiError(out), out.status, out.headers);
    return c.json(errorBody(out), out.status, out.headers);
  });
  app.notFound((c) => {
    const e = new ApiError("not_found", `no route ${c.req.method} ${c.req.path}`);
    return c.req.path.startsWith("/v1/") ? c.json(openAiError(e), 404) : c.json(errorBody(e), 404);
  });
}

/** `/healthz`, `/readyz` (failing while draining), and closed connections while draining. */
function mountHealth(app: Hono<Env>, st: AppState): void {
  // While draining, every answer closes its connection, so keep-alive clients (a page retrying) move to another replica.
  app.use("*", async (c, next) => {
    await next();
    if (st.draining) c.header("Connection", "close");
  });

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/readyz", async (c) => {
    const ok = !st.draining && (await st.d.ready().catch(() => false));
    return c.json({ ok, draining: st.draining }, ok ? 200 : 503);
  });
}

/** The routes that start an answer: each counts its request with the answer's admission (`countedOnce`). */
const ANSWER_ROUTES: ReadonlySet<string> = new Set(["/api/v1/query", "/v1/chat/completions"]);

/**
 * The API key (and, for a POST, its rate limit), then the body limit, on `/api/*` and `/v1/*`: a
 * request is authenticated before anything of its body is read.
 */
function mountAuth(app: Hono<Env>, st: AppState): void {
  const { d } = st;
  // Body size next, for every route that takes one: a clear 413 before anything is parsed.
  const limitBody = bodyLimit({
    maxSize: d.maxBodyBytes,
    onError: () => {
      throw new ApiError("payload_too_large", `the request body is over ${d.maxBodyBytes} bytes`);
    },
  });

  /** Who is asking: the name of a valid key, or `anonymous` when allowed and no key is sent. */
  const authenticate = async (c: Context<Env>, next: () => Promise<void>) => {
    const key = presentedApiKey((n) => c.req.header(n));
    const owner = key === null ? (d.anonymous ? ANONYMOUS_OWNER : null) : d.keys.authenticate(key);
    if (owner === null) {
      throw new ApiError(
        "unauthorized",
        key === null ? "send an API key: Authorization: Bearer <key>" : "the API key is not valid",
        { "WWW-Authenticate": 'Bearer realm="agentmesh"' },
      );
    }
    if (st.draining)
      throw new ApiError("unavailable", "this gateway is shutting down; retry (another replica answers)", {
        "Retry-After": "1",
      });
    c.set("owner", owner);
    // Every request that changes something counts against the key's rate limit, on every replica;
    // a route that starts an answer counts it in the same round trip as the answer's other bounds.
    if (c.req.method === "POST" && !ANSWER_ROUTES.has(c.req.path)) {
      const decision = await d.limits.allowRequest(owner);
      if (!decision.allowed) throw limitRefusal({ ok: false, refused: "rate", retryAfterMs: decision.retryAfterMs });
    }
    await next();
  };
  app.use("/api/*", authenticate);
  app.use("/v1/*", authenticate);
  app.use("/api/*", limitBody);
  app.use("/v1/*", limitBody);
}

/**
 * Streams a session's events as SSE (`id: <seq>:<version>:<index>`, `event: <type>`), after
 * `after`, with its token deltas (their id: their own sequence, the last event before them), until `complete`, the client leaving, or drain; then
 * gives its slot back (`release`).
 */
/** What one stream serves: its session, from where, and the slot it gives back when it ends. */
interface StreamRequest {
  readonly sessionId: string;
  readonly after: EventCursor | null;
  /** Where its replay starts, when known to be past the stream's start (a session started just now). */
  readonly fromSeq?: number | undefined;
  readonly release: () => void;
  readonly prelude?: Record<string, unknown>;
  readonly cancelOnDisconnect?: boolean;
}

function streamSession(st: AppState, c: Context<Env>, r: StreamRequest) {
  const { sessionId, after, release, prelude } = r;
  const { d } = st;
  return streamSSE(c, async (s: SSEStreamingApi) => {
    const ac = new AbortController();
    st.streams.add(ac);
    s.onAbort(() => ac.abort());
    // a client may have left before this runs: its abort has fired already
    if (c.req.raw.signal.aborted) ac.abort();
    else c.req.raw.signal.addEventListener("abort", () => ac.abort(), { once: true });
    const ping = setInterval(() => void s.write(": ping\n\n").catch(() => ac.abort()), d.pingMs ?? 15_000);
    let ended = false;
    // the answering node's text streamed on this connection, and where it starts in the answer
    // (past 0 when the stream resumed in the middle of it)
    const answered = { from: -1, text: "" };
    let lastId =
      after?.seq === undefined ? null : eventId({ seq: after.seq, version: after.version, index: after.index });
    try {
      if (prelude) await s.writeSSE({ event: "session", data: JSON.stringify(prelude) });
      for await (const item of sessionStream(d.hub, sessionId, {
        after,
        fromSeq: r.fromSeq,
        tokens: true,
        signal: ac.signal,
        bufferBytes: d.streamBufferBytes,
        buffered: d.buffered,
      })) {
        if (item.kind === "token") {
          if (isAnswerToken(item.event)) {
            if (answered.from < 0) answered.from = item.event.offset ?? 0;
            answered.text += item.event.delta;
          }
          if (item.id !== null) lastId = item.id;
          await s.writeSSE({
            ...(item.id === null ? {} : { id: item.id }),
            event: "token",
            data: JSON.stringify(item.event),
          });
        } else {
          if (item.event.type === "complete") await replaceRestarted(s, item.event, answered);
          lastId = item.id;
          await s.writeSSE({ id: lastId, event: item.event.type, data: JSON.stringify(item.event) });
        }
        if (item.event.type === "complete") ended = true;
        // a session that waits for a person holds no slot (its reply takes one, so ask the store);
        // one that ended frees its slot as its stream ends, with the stream's own bounds
        else if (isAwaitingUser(item.event)) await releaseIfStopped(d, c.get("owner"), sessionId);
      }
    } catch (err) {
      if (!ac.signal.aborted) await streamFailed(d, s, sessionId, err, lastId);
    } finally {
      clearInterval(ping);
      st.streams.delete(ac);
      // sent together (one pipelined write), and the stream ends only once the slot is free
      const freed = ended ? d.limits.release(c.get("owner"), sessionId) : null;
      release();
      await freed?.catch((err: unknown) => {
        d.log.warn({ err: (err as Error).message, session_id: sessionId }, "session slot not given back");
      });
      // Only when the client asked, and only for a client that left (not a replica shutting down).
      if (r.cancelOnDisconnect === true && !ended && !st.draining)
        await cancelAfterDisconnect(d, sessionId, "cancel_on_disconnect");
    }
  });
}

/**
 * Before a `complete` whose answer does not begin with the answering node's text already streamed
 * (the node ran again and said something else): a `replace` event with the whole answer, so a
 * client showing the tokens shows it instead (docs/gateway.md, "The stream").
 */
async function replaceRestarted(
  s: SSEStreamingApi,
  e: Extract<SessionEvent, { type: "complete" }>,
  answered: { readonly from: number; readonly text: string },
): Promise<void> {
  const final = answered.from > 0 ? e.final_answer.slice(answered.from) : e.final_answer;
  if (answered.from <= e.final_answer.length && answerRemainder(answered.text, final, e.truncated === true) !== null)
    return;
  const data = { session_id: e.session_id, reason: "answer_restarted", text: e.final_answer };
  await s.writeSSE({ event: "replace", data: JSON.stringify(data) });
}

/** How long the last event of a stream that overflowed may wait for its client to read, before the connection is cut. */
const OVERFLOW_WRITE_MS = 5000;

/**
 * The stream's `error` event (code `unavailable`, with `last_event_id`: resume from it): its buffer
 * overflowed (`reason: "buffer_full"`, the client read too slowly) or its source failed.
 */
async function streamFailed(
  d: GatewayDeps,
  s: SSEStreamingApi,
  sessionId: string,
  err: unknown,
  lastId: string | null,
) {
  const overflow = err instanceof StreamOverflow;
  if (overflow) d.log.info({ session_id: sessionId, limit_bytes: err.limitBytes }, "stream buffer full; ending it");
  else d.log.warn({ session_id: sessionId, err: (err as Error).message }, "event stream failed");
  const data = JSON.stringify({
    code: "unavailable",
    ...(overflow ? { reason: "buffer_full" } : {}),
    message: overflow
      ? "the client read this stream too slowly; reconnect with Last-Event-ID"
      : "the event stream was interrupted; reconnect with Last-Event-ID",
    last_event_id: lastId,
  });
  const wrote = s.writeSSE({ event: "error", data }).then(
    () => true,
    () => false,
  );
  const timer = new Promise<false>((r) => setTimeout(() => r(false), OVERFLOW_WRITE_MS).unref());
  // a client that reads nothing more would hold the connection forever: cut it
  if (!(await Promise.race([wrote, timer]))) s.abort();
}

/** `POST /api/v1/query`: starts (or joins) a session, then streams it, or answers its ids as JSON. */
function mountQuery(app: Hono<Env>, st: AppState): void {
  const { d } = st;
  app.post("/api/v1/query", (c) => countedOnce(d.limits, c.get("owner"), (reached) => query(st, c, reached)));
}

/** The query route's work; `reached` is called as it admits the answer (counting the request). */
async function query(st: AppState, c: Context<Env>, reached: () => void) {
  const { d } = st;
  const owner = c.get("owner");
  const body = await readJson(c, QueryBody);
  const workflow = body.workflow ?? d.defaultWorkflow;
  const q = checkQuery(body.query, workflow);
  if (!q.ok) throw new ApiError("invalid_query", q.reason);
  const {
    query: _q,
    workflow: _w,
    task_id: _t,
    messages: _m,
    thread_id: _th,
    cancel_on_disconnect: _c,
    ...rest
  } = body;
  const misplaced = misplacedOption(workflow, rest);
  if (misplaced) throw new ApiError("bad_request", misplaced.message);
  const { attachments, ...chosen } = rest;
  const options: SessionOptions = { ...chosen, ...(attachments?.length ? { attachments } : {}) };
  const key = idempotencyKeyOf(c);
  if (key !== undefined && body.task_id !== undefined)
    throw new ApiError("bad_request", "send either task_id or an Idempotency-Key header, not both");
  const taskId =
    key === undefined ? body.task_id : await claimIdempotencyKey(d.limits, owner, key, "/api/v1/query", body);
  const accept = c.req.header("accept") ?? "";
  const streamed = !(accept.includes("application/json") && !accept.includes("text/event-stream"));
  // the stream's bounds with the session's slot, before its session: a refusal starts nothing
  let release: () => void = () => {};
  const admit = async (slot: string) => {
    reached();
    release = await st.slots.admitAnswer(owner, slot, { streamed, isLive: liveSession(d.store) });
  };
  // a session this request starts has its events past what the hub has delivered now
  const position = d.hub.position();
  const started = await startSession(
    d,
    owner,
    {
      query: q.query,
      workflow,
      options,
      taskId,
      messages: body.messages,
      threadId: body.thread_id,
      traceparent: c.req.header("traceparent"),
    },
    admit,
  ).catch((err: unknown) => {
    release();
    throw err;
  });
  const head = {
    session_id: started.sessionId,
    thread_id: started.threadId,
    created: started.created,
    replied: started.replied,
  };
  c.header("X-Agentmesh-Session", started.sessionId);
  c.header("X-Agentmesh-Thread", started.threadId);
  if (!streamed) return c.json(head, 202);
  return streamSession(st, c, {
    sessionId: started.sessionId,
    after: started.after,
    fromSeq: startedAfter(started, position),
    release,
    prelude: head,
    cancelOnDisconnect: body.cancel_on_disconnect === true,
  });
}

/** One owned session: its summary, its events (resumed after Last-Event-ID), a reply to it, its cancel. */
function mountSessionRoutes(app: Hono<Env>, st: AppState): void {
  const { d } = st;
  app.get("/api/v1/sessions/:id", async (c) =>
    c.json(sessionSummary(await ownedSession(d.store, c.get("owner"), c.req.param("id")))),
  );

  app.get("/api/v1/sessions/:id/events", async (c) => {
    const state = await ownedSession(d.store, c.get("owner"), c.req.param("id"));
    const raw = c.req.header("last-event-id") ?? c.req.query("last_event_id");
    const after = parseEventId(raw);
    if (after === undefined)
      throw new ApiError(
        "bad_request",
        `Last-Event-ID must be <seq>:<version>:<index> as sent in an event's id, got ${JSON.stringify(raw?.slice(0, 40))}`,
      );
    return streamSession(st, c, {
      sessionId: state.meta.session_id,
      after,
      release: await st.slots.open(c.get("owner")),
    });
  });

  app.post("/api/v1/sessions/:id/reply", async (c) => {
    const state = await ownedSession(d.store, c.get("owner"), c.req.param("id"));
    const body = await readJson(c, ReplyBody);
    if (state.meta.status !== "awaiting_user")
      throw new ApiError(
        "conflict",
        `session ${state.meta.session_id} is ${state.meta.status}, not waiting for an answer`,
      );
    const sid = state.meta.session_id;
    // the session held no slot while it waited: its reply resumes it, so it takes one again
    await takeSessionSlot(d, c.get("owner"), sid);
    await d.publisher
      .publishInbox({
        v: SCHEMA_VERSION,
        kind: "user_reply",
        session_id: sid,
        input_id: newUserInputId(),
        text: body.text,
      })
      .catch(async (err: unknown) => {
        await d.limits.release(c.get("owner"), sid);
        throw err;
      });
    return c.json({ session_id: sid }, 202);
  });

  app.post("/api/v1/sessions/:id/cancel", async (c) => {
    const state = await ownedSession(d.store, c.get("owner"), c.req.param("id"));
    const body =
      c.req.header("content-length") === "0" || !c.req.header("content-type") ? {} : await readJson(c, CancelBody);
    const sid = state.meta.session_id;
    // One cancel per session is enough: the id de-duplicates repeated clicks.
    await d.publisher.publishInbox({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: sid,
      input_id: inputIds.clientCancel(sid, "gateway"),
      reason: body.reason ?? "cancelled through the gateway",
    });
    return c.json({ session_id: sid }, 202);
  });
}

/** An owned thread's sessions, and the workflows a query may name. */
function mountThreadsAndWorkflows(app: Hono<Env>, d: GatewayDeps): void {
  app.get("/api/v1/threads/:id", async (c) => {
    const owner = c.get("owner");
    const id = c.req.param("id");
    const thread = ThreadId.safeParse(id).success ? await d.store.loadThread(id) : null;
    if (thread === null || thread.owner !== owner) throw new ApiError("not_found", `no thread ${id}`);
    const states = await Promise.all(thread.sessions.map((sid) => d.store.load(sid)));
    return c.json({
      thread_id: thread.thread_id,
      sessions: states.flatMap((l) => (l ? [sessionSummary(l.state)] : [])),
    });
  });

  app.get("/api/v1/workflows", (c) =>
    c.json({
      workflows: WorkflowName.options.map((name) => ({ name, description: WORKFLOW_DESCRIPTIONS[name] })),
      default: d.defaultWorkflow,
    }),
  );
}
