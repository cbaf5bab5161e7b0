import {
  SCHEMA_VERSION,
  SessionId,
  submitEndpoint,
  newSessionId,
  newThreadId,
  type SubmitReply,
  conversationTurn,
  isTerminal,
  type ChatMessage,
  type Naming,
  type SessionOptions,
  type SessionEvent,
  type SessionState,
  type WorkflowName,
} from "@agentmesh/contracts";
import { request, type Log } from "@agentmesh/messaging";
import { TRACING_OFF, type Tracing } from "@agentmesh/service-kit";
import type { SessionStore } from "@agentmesh/session-store";
import type { NatsConnection } from "@nats-io/transport-node";
import { ApiError } from "./http.js";
import { limitRefusal } from "./stream-slots.js";
import type { GatewayLimits } from "./limits.js";
import type { EventHub } from "./fanout.js";
import type { BufferedTotal, EventCursor } from "./stream.js";

/** What the gateway needs to start and read sessions. */
export interface SessionDeps {
  readonly nc: NatsConnection;
  readonly naming: Naming;
  readonly store: SessionStore;
  readonly limits: GatewayLimits;
  readonly log: Log;
  /** How long to wait for a coordinator to accept a submit. */
  readonly submitTimeoutMs: number;
  /** Where the `submit` span goes (default off). */
  readonly tracing?: Tracing;
}

/** What the streaming routes share: the sessions' dependencies, the replica's hub, the buffer bound. */
export interface StreamDeps extends SessionDeps {
  readonly hub: EventHub;
  /** Bytes an open stream holds for a client that does not read, at most (default 1 MiB). */
  readonly streamBufferBytes?: number | undefined;
  /** The bytes every open stream of the replica holds, summed (its metrics read it). */
  readonly buffered?: BufferedTotal | undefined;
}

/** A query as the gateway hands it on. */
export interface StartRequest {
  readonly query: string;
  readonly workflow: WorkflowName;
  readonly options: SessionOptions;
  /** The client's id of the request: its idempotency key, scoped to the owner. */
  readonly taskId?: string | undefined;
  readonly messages?: readonly ChatMessage[] | undefined;
  /** Continues this thread; absent = a new thread. */
  readonly threadId?: string | undefined;
  /** The client's W3C `traceparent` header: the session's trace continues it (an invalid one is ignored). */
  readonly traceparent?: string | undefined;
}

export interface Started {
  readonly sessionId: string;
  readonly threadId: string;
  readonly created: boolean;
  /** The query went to the thread's waiting session as its reply. */
  readonly replied: boolean;
  /** Events the client has in effect already seen (for a reply: everything before it). */
  readonly after: EventCursor | null;
}

/**
 * Where a stream of a session just started may begin its replay: past `position` (the hub's, read
 * before the submit) when this request created the session or answered it, since every event it
 * then has was stored after the submit; undefined (from the stream's start) for a retried request,
 * whose session may be older.
 */
export function startedAfter(started: Started, position: number): number | undefined {
  return started.created || started.replied ? position + 1 : undefined;
}

/** A session the owner may see, or a 404 that does not reveal whether it exists. */
export async function ownedSession(store: SessionStore, owner: string, sessionId: string): Promise<SessionState> {
  const loaded = SessionId.safeParse(sessionId).success ? await store.load(sessionId) : null;
  if (!loaded || loaded.state.meta.owner !== owner) throw new ApiError("not_found", `no session ${sessionId}`);
  return loaded.state;
}

/**
 * Whether a session still holds a concurrency slot: it runs. One waiting for a person holds none
 * (it may wait for days; its reply takes a slot again), nor one that ended. One not in the store
 * is live: a replica took its slot and is submitting it right now (the coordinator writes it only
 * then), so counting it as ended would let concurrent requests take its slot. A slot whose session
 * never appears lapses at its TTL (the session deadline), and a session's own keys expire only
 * long after that.
 */
export const liveSession =
  (store: SessionStore) =>
  async (sessionId: string): Promise<boolean> => {
    const loaded = await store.load(sessionId);
    return loaded === null || (!isTerminal(loaded.state.meta.status) && loaded.state.meta.status !== "awaiting_user");
  };

/** The event that says a session now waits for a person: the `awaiting_user` stage, `running`. */
export const isAwaitingUser = (e: SessionEvent): boolean =>
  e.type === "stage" && e.name === "awaiting_user" && e.status === "running";

/**
 * Gives back `owner`'s slot of a session a stream saw end or pause, when the store agrees it holds
 * none now: an `awaiting_user` a stream replays may be one its reply has answered since, and that
 * session runs again on the slot the reply took.
 */
export async function releaseIfStopped(d: Pick<SessionDeps, "limits" | "store">, owner: string, sessionId: string) {
  if (!(await liveSession(d.store)(sessionId))) await d.limits.release(owner, sessionId);
}

/**
 * Takes one of `owner`'s session slots for `sessionId` (a new session, or a waiting one its reply
 * resumes), or refuses with a 429 that says how many run.
 */
export async function takeSessionSlot(d: Pick<SessionDeps, "limits" | "store">, owner: string, sessionId: string) {
  const admitted = await d.limits.admit(owner, sessionId, liveSession(d.store));
  if (!admitted.ok) throw limitRefusal({ ok: false, refused: "sessions", count: admitted.count, max: admitted.max });
}

/**
 * Starts a session for `owner` (or, in a thread whose session waits for a person, answers it):
 * takes a concurrency slot (`take`: the slot alone by default; a route that admits the whole
 * answer at once takes its other bounds with it), submits to a coordinator over NATS, and maps its typed refusal to
 * the API's errors. The coordinator writes the owner and thread; the gateway writes nothing
 * but its limits.
 */
export async function startSession(
  d: SessionDeps,
  owner: string,
  req: StartRequest,
  take: (slot: string) => Promise<void> = (slot) => takeSessionSlot(d, owner, slot),
): Promise<Started> {
  const threadId = req.threadId ?? newThreadId();
  const waiting = req.threadId === undefined ? null : await waitingSession(d, owner, req.threadId);
  const proposed = newSessionId();
  // a new session takes a slot; so does a reply, which resumes a session that held none while it waited
  const slot = waiting?.sessionId ?? proposed;
  await take(slot);
  const reply = await submit(d, owner, req, proposed, threadId, slot);
  if (!reply.ok) {
    await d.limits.release(owner, slot);
    throw refusal(reply.error, threadId);
  }
  if (reply.session_id !== slot) {
    // A retry (same task_id) answered by the session its first try started, or a reply that went to
    // another session than the one seen waiting: that session holds the slot (re-admitting one that
    // holds it already takes no second).
    await d.limits.release(owner, slot);
    await d.limits.admit(owner, reply.session_id, liveSession(d.store));
  }
  const after = reply.replied && waiting?.sessionId === reply.session_id ? waiting.cursor : null;
  return {
    sessionId: reply.session_id,
    threadId: reply.thread_id ?? threadId,
    created: reply.created,
    replied: reply.replied,
    after,
  };
}

/**
 * The thread's last session when it waits for a person (the query answers it; its stream resumes
 * after what was already sent), else null; a thread of another owner is a 404.
 */
async function waitingSession(
  d: SessionDeps,
  owner: string,
  threadId: string,
): Promise<{ sessionId: string; cursor: EventCursor } | null> {
  const thread = await d.store.loadThread(threadId);
  if (thread !== null && thread.owner !== owner) throw new ApiError("not_found", `no thread ${threadId}`);
  const last = thread?.sessions.at(-1);
  const state = last === undefined ? null : ((await d.store.load(last))?.state ?? null);
  if (state?.meta.status === "awaiting_user")
    return {
      sessionId: state.meta.session_id,
      cursor: { version: state.meta.version, index: Number.MAX_SAFE_INTEGER },
    };
  return null;
}

/** Submits to a coordinator in a traced span; no answer in time releases the slot (`slot`'s) and is a 503. */
async function submit(
  d: SessionDeps,
  owner: string,
  req: StartRequest,
  proposed: string,
  threadId: string,
  slot: string,
): Promise<SubmitReply> {
  // The session's trace continues this span (or, with tracing off, the client's traceparent as is).
  const span = (d.tracing ?? TRACING_OFF).start("submit", {
    parent: req.traceparent,
    kind: "server",
    attributes: { "agentmesh.owner": owner, "langfuse.session.id": threadId },
  });
  try {
    const reply = await request(
      d.nc,
      submitEndpoint(d.naming),
      {
        v: SCHEMA_VERSION,
        query: req.query,
        workflow: req.workflow,
        session_id: proposed,
        ...(req.taskId === undefined ? {} : { idempotency_key: `${owner}:${req.taskId}` }),
        options: req.options,
        owner,
        thread_id: threadId,
        ...(req.messages === undefined ? {} : { messages: [...req.messages] }),
      },
      d.submitTimeoutMs,
      { traceparent: span.traceparent ?? req.traceparent },
    );
    if (reply.ok) span.setAttributes({ "agentmesh.session_id": reply.session_id, "agentmesh.replied": reply.replied });
    else span.fail(new Error(reply.error.code));
    span.end();
    return reply;
  } catch (err) {
    span.fail(err);
    span.end();
    await d.limits.release(owner, slot);
    d.log.warn({ err: (err as Error).message }, "submit failed");
    throw new ApiError("unavailable", "no coordinator accepted the query in time; try again");
  }
}

/** The API's error for a coordinator's typed refusal of a submit. */
function refusal(e: Extract<SubmitReply, { ok: false }>["error"], threadId: string): ApiError {
  if (e.code === "invalid_query" || e.code === "invalid_message" || e.code === "unknown_workflow")
    return new ApiError(e.code === "invalid_query" ? "invalid_query" : "bad_request", e.message);
  if (e.code === "unknown_thread") return new ApiError("not_found", `no thread ${threadId}`);
  if (e.code === "payload_too_large") return new ApiError("payload_too_large", e.message);
  return new ApiError(
    e.retryable ? "unavailable" : "internal",
    e.retryable ? "the system is busy; try again" : "the query could not be started",
  );
}

/**
 * What each workflow answers with: the fields of `result` in `GET /api/v1/sessions/:id`, per
 * workflow, and what each holds (docs/session-results.md is generated from this table).
 */
export const SESSION_RESULT_FIELDS = {
  "critic-chain": {
    final_answer: "the finalizer's answer; null until the run ends",
    final_reasoning_trace:
      "how the answer was reached (plan, research, expert, the critics' decisions); null until the run ends",
  },
  halo: {
    response_str:
      "the synthesized answer with numbered inline citations (`[1,2]`); null until the judge and synthesis ran",
    judge_response: "the judge's summary of how each specialist scored; null until judged",
    citations: "the merged, de-duplicated sources (`title`, `url`, `path`, `snippet`): `[n]` in the answer is the n-th",
  },
  blackboard: {
    final_answer: "the answer; null until the critic accepted a plan's results (or the run ended)",
    citations: "the sources the answer cites",
    last_critic_report:
      "the critic's latest report (`plan_version`, `step_index`, `retry`, `report`: quality, hallucination risk, issues, acceptable, rewrite suggestion, human input); null before the first",
  },
  supervisor: {
    response: "the answering agent's final text; null until it answered",
    routing:
      "the router's decision (`agent`, `confidence`, `reason`, `is_low_confidence`), or the client's `mode` with confidence 1; null before routing",
    handoff_history: "each handoff (`source_agent`, `target_agent`, `task_description`, `context`), oldest first",
    handoff_count: "handoffs made (at most 3)",
    handoff_summary: "the handoffs, one line each (or `No handoffs.`)",
    visited_agents: "the agents that held the task, in order: the routed one, then each handoff's target",
    visualizations: "the data agent's charts (Vega-Lite specs, data inline), oldest first",
    user_id: "who asked: the API key's name",
    provider: "the model provider the request named; null if none",
    model: "the model the request named; null if none",
    tier: "the tier the request named (`fast`, `standard`, `strong`); null if none",
    image_attachments: "the images sent with the query (`url`, `mime_type`, `name`)",
  },
  clarify: {
    final_answer: "the synthesized answer with its citations; null while asking or researching",
    citations: "the sources the answer cites, `[n]` being the n-th",
    clarification_count: "clarifications asked in a row in this thread (reset by research)",
    last_decision:
      "the orchestrator's latest decision (`iteration`, `layer`, `next_agent`, `clarification_count`, `max_clarifications`, `reason`); null before the first",
  },
} as const satisfies Record<WorkflowName, Record<string, string>>;

/** A session's `result`: its workflow's answer fields as the state holds them now (see SESSION_RESULT_FIELDS). */
export function sessionResult(state: SessionState) {
  const d = state.data;
  switch (d.workflow) {
    case "critic-chain":
      return { final_answer: d.final_answer, final_reasoning_trace: d.final_reasoning_trace };
    case "halo":
      return { response_str: d.response_str, judge_response: d.judge_response, citations: d.citations };
    case "blackboard":
      return {
        final_answer: d.final_answer,
        citations: d.citations,
        last_critic_report: d.critic_reports.at(-1) ?? null,
      };
    case "supervisor":
      return {
        response: d.response,
        routing:
          d.selected_agent === null
            ? null
            : {
                agent: d.selected_agent,
                confidence: d.routing_confidence ?? 0,
                reason: d.routing_reason ?? "",
                is_low_confidence: d.is_low_confidence,
              },
        handoff_history: d.handoff_history,
        handoff_count: d.handoff_count,
        handoff_summary: d.handoff_summary,
        visited_agents: d.visited_agents,
        visualizations: d.shared_memory.data_visualizations ?? [],
        user_id: d.user_id,
        provider: d.provider,
        model: d.model,
        tier: d.tier,
        image_attachments: d.image_attachments,
      };
    case "clarify":
      return {
        final_answer: d.final_answer,
        citations: d.citations,
        clarification_count: d.clarification_count,
        last_decision: d.decisions.at(-1) ?? null,
      };
  }
}

/** A session as `GET /api/v1/sessions/:id` shows it: what every session has, and its workflow's `result`. */
export function sessionSummary(state: SessionState) {
  const m = state.meta;
  const turn = conversationTurn(state);
  return {
    session_id: m.session_id,
    workflow: m.workflow,
    status: m.status,
    thread_id: m.thread_id,
    question: turn.question,
    created_at: m.created_at,
    updated_at: m.updated_at,
    usage: m.usage,
    final_answer: isTerminal(m.status) ? turn.answer : null,
    error: m.error === null ? null : { code: m.error.code, message: m.error.message },
    awaiting_user: m.status === "awaiting_user" ? { question: turn.asked ?? "" } : null,
    result: sessionResult(state),
  };
}
