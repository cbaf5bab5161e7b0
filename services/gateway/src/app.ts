import { randomBytes } from "node:crypto";
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import { z } from "zod";
import {
  Attachments,
  Budgets,
  Capability,
  ChatMessage,
  LIMITS,
  ResearchDepth,
  ResearchScenario,
  SCHEMA_VERSION,
  StrategyProfile,
  SupervisorAgent,
  ThreadId,
  WORKFLOW_DESCRIPTIONS,
  WorkflowName,
  checkQuery,
  inputIds,
} from "@agentmesh/contracts";
import type { Publisher } from "@agentmesh/messaging";
import { ANONYMOUS_OWNER, presentedApiKey, type ApiKeyVerifier } from "./api-keys.js";
import { ApiError, errorBody, readJson } from "./http.js";
import { mountOpenAi, openAiError } from "./openai.js";
import { ownedSession, sessionSummary, startSession, type SessionDeps } from "./sessions.js";
import { eventId, parseEventId, sessionStream, type EventCursor } from "./stream.js";
import { mountStatic } from "./static.js";

/** Everything the HTTP app needs; built by main from config and connections. */
export interface GatewayDeps extends SessionDeps {
  /** Publishes replies and cancels under the `client` sender. */
  readonly publisher: Pick<Publisher, "publishInbox">;
  readonly keys: ApiKeyVerifier;
  readonly anonymous: boolean;
  readonly defaultWorkflow: WorkflowName;
  readonly maxBodyBytes: number;
  /** NATS and Redis answer (for /readyz). */
  readonly ready: () => Promise<boolean>;
  /** A keep-alive comment on open streams this often (default 15 s). */
  readonly pingMs?: number;
}

type Env = { Variables: { owner: string } };

/** The body of `POST /api/v1/query` (parameters, plus threads and budgets). */
const QueryBody = z
  .object({
    query: z.unknown(),
    workflow: WorkflowName.optional(),
    mode: SupervisorAgent.optional(),
    task_id: z.string().min(1).max(128).optional(),
    messages: z.array(ChatMessage).max(1000).optional(),
    depth: ResearchDepth.optional(),
    scenario: ResearchScenario.optional(),
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
  /** Stops taking requests (`/readyz` fails) and ends every open stream. */
  drain(): void;
  /** Streams open now. */
  openStreams(): number;
}

/** Builds the gateway's HTTP app: `/api/v1`, the OpenAI-compatible `/v1`, health, and the web page. */
export function createGatewayApp(d: GatewayDeps): GatewayApp {
  const app = new Hono<Env>();
  const streams = new Set<AbortController>();
  let draining = false;

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

  // While draining, every answer closes its connection, so keep-alive clients (a page retrying) move to another replica.
  app.use("*", async (c, next) => {
    await next();
    if (draining) c.header("Connection", "close");
  });

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/readyz", async (c) => {
    const ok = !draining && (await d.ready().catch(() => false));
    return c.json({ ok, draining }, ok ? 200 : 503);
  });

  // Body size first, for every route that takes one: a clear 413 before anything is parsed.
  const limitBody = bodyLimit({
    maxSize: d.maxBodyBytes,
    onError: () => {
      throw new ApiError("payload_too_large", `the request body is over ${d.maxBodyBytes} bytes`);
    },
  });
  app.use("/api/*", limitBody);
  app.use("/v1/*", limitBody);

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
    if (draining)
      throw new ApiError("unavailable", "this gateway is shutting down; retry (another replica answers)", {
        "Retry-After": "1",
      });
    c.set("owner", owner);
    // Every request that changes something counts against the key's rate limit, on every replica.
    if (c.req.method === "POST") {
      const decision = await d.limits.allowRequest(owner);
      if (!decision.allowed) {
        const secs = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
        throw new ApiError("rate_limited", `too many requests for this API key; retry in ${secs} s`, {
          "Retry-After": String(secs),
        });
      }
    }
    await next();
  };
  app.use("/api/*", authenticate);
  app.use("/v1/*", authenticate);

  /**
   * Streams a session's events as SSE (`id: <version>:<index>`, `event: <type>`), after `after`,
   * with live token deltas (no id), until `complete`, the client leaving, or drain.
   */
  const streamSession = (
    c: Context<Env>,
    sessionId: string,
    after: EventCursor | null,
    prelude?: Record<string, unknown>,
    cancelOnDisconnect = false,
  ) =>
    streamSSE(c, async (s: SSEStreamingApi) => {
      const ac = new AbortController();
      streams.add(ac);
      s.onAbort(() => ac.abort());
      c.req.raw.signal.addEventListener("abort", () => ac.abort(), { once: true });
      const ping = setInterval(() => void s.write(": ping\n\n").catch(() => ac.abort()), d.pingMs ?? 15_000);
      let ended = false;
      try {
        if (prelude) await s.writeSSE({ event: "session", data: JSON.stringify(prelude) });
        for await (const item of sessionStream(d.nc, d.naming, sessionId, {
          after,
          tokens: true,
          signal: ac.signal,
          log: d.log,
        })) {
          if (item.kind === "token") await s.writeSSE({ event: "token", data: JSON.stringify(item.event) });
          else await s.writeSSE({ id: eventId(item.event), event: item.event.type, data: JSON.stringify(item.event) });
          if (item.event.type === "complete") {
            ended = true;
            await d.limits.release(c.get("owner"), sessionId);
          }
        }
      } catch (err) {
        if (!ac.signal.aborted) {
          d.log.warn({ session_id: sessionId, err: (err as Error).message }, "event stream failed");
          await s
            .writeSSE({
              event: "error",
              data: JSON.stringify({
                code: "unavailable",
                message: "the event stream was interrupted; reconnect with Last-Event-ID",
              }),
            })
            .catch(() => {});
        }
      } finally {
        clearInterval(ping);
        streams.delete(ac);
        // Only when the client asked, and only for a client that left (not a replica shutting down).
        if (cancelOnDisconnect && !ended && !draining) {
          await d.publisher
            .publishInbox({
              v: SCHEMA_VERSION,
              kind: "cancel",
              session_id: sessionId,
              input_id: inputIds.cancel(`${sessionId}-gateway`),
              reason: "the client disconnected (cancel_on_disconnect)",
            })
            .catch((err: unknown) =>
              d.log.warn({ session_id: sessionId, err: (err as Error).message }, "cancel on disconnect failed"),
            );
        }
      }
    });

  app.post("/api/v1/query", async (c) => {
    const body = await readJson(c, QueryBody);
    const q = checkQuery(body.query);
    if (!q.ok) throw new ApiError("invalid_query", q.reason);
    const options = {
      ...(body.mode ? { mode: body.mode } : {}),
      ...(body.depth ? { depth: body.depth } : {}),
      ...(body.scenario ? { scenario: body.scenario } : {}),
      ...(body.budgets ? { budgets: body.budgets } : {}),
      ...(body.retry_limit ? { retry_limit: body.retry_limit } : {}),
      ...(body.strategy_profile ? { strategy_profile: body.strategy_profile } : {}),
      ...(body.capabilities ? { capabilities: body.capabilities } : {}),
      ...(body.attachments?.length ? { attachments: body.attachments } : {}),
    };
    const started = await startSession(d, c.get("owner"), {
      query: q.query,
      workflow: body.workflow ?? d.defaultWorkflow,
      options,
      taskId: body.task_id,
      messages: body.messages,
      threadId: body.thread_id,
      traceparent: c.req.header("traceparent"),
    });
    const head = {
      session_id: started.sessionId,
      thread_id: started.threadId,
      created: started.created,
      replied: started.replied,
    };
    c.header("X-Agentmesh-Session", started.sessionId);
    c.header("X-Agentmesh-Thread", started.threadId);
    const accept = c.req.header("accept") ?? "";
    if (accept.includes("application/json") && !accept.includes("text/event-stream")) return c.json(head, 202);
    return streamSession(c, started.sessionId, started.after, head, body.cancel_on_disconnect === true);
  });

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
        `Last-Event-ID must be <version>:<index> as sent in an event's id, got ${JSON.stringify(raw?.slice(0, 40))}`,
      );
    return streamSession(c, state.meta.session_id, after);
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
    await d.publisher.publishInbox({
      v: SCHEMA_VERSION,
      kind: "user_reply",
      session_id: sid,
      input_id: inputIds.user(randomBytes(12).toString("hex")),
      text: body.text,
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
      input_id: inputIds.cancel(`${sid}-gateway`),
      reason: body.reason ?? "cancelled through the gateway",
    });
    return c.json({ session_id: sid }, 202);
  });

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

  mountOpenAi(app, d);
  mountStatic(app);

  return {
    app,
    drain() {
      draining = true;
      for (const s of streams) s.abort();
    },
    openStreams: () => streams.size,
  };
}
