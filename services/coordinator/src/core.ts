import { randomUUID } from "node:crypto";
import { createHash } from "node:crypto";
import {
  LIMITS,
  SCHEMA_VERSION,
  SubmitRequest,
  boundConversation,
  checkQuery,
  misplacedOption,
  conversationTurn,
  inputIds,
  parseTaskId,
  threadCarry,
  isTerminal,
  AgentmeshError,
  formatZodError,
  type ChatMessage,
  type InboxInput,
  type Outbox,
  type SubmitReply,
  type Thread,
  type ThreadCarry,
} from "@agentmesh/contracts";
import type { SessionStore } from "@agentmesh/session-store";
import type { CrashHook } from "@agentmesh/messaging";
import { createSession, parseTimerMember, step, timerMember, type RuntimeDefaults } from "@agentmesh/workflows";
import { TRACING_OFF, type Logger, type Tracing } from "@agentmesh/service-kit";
import { mintSessionTrace, rootTraceparent, sessionSpans } from "./trace.js";

/** The publishing side the coordinator needs (implemented over JetStream by messaging). */
export interface CoordinatorPublisher {
  publishInbox(input: InboxInput, ctx?: PublishContext): Promise<void>;
  publishOutbox(entries: Outbox["entries"], ctx?: PublishContext): Promise<void>;
}

/** The trace headers of what the coordinator publishes. */
export interface PublishContext {
  readonly traceparent?: string | undefined;
  readonly threadId?: string | null | undefined;
}

/** What a submit's transport knows besides its body. */
export interface SubmitContext {
  /** The client's W3C traceparent (a header of the request), which the session's trace continues. */
  readonly traceparent?: string | undefined;
}

export interface CoordinatorCoreDeps {
  readonly store: SessionStore;
  readonly publisher: CoordinatorPublisher;
  readonly log: Logger;
  readonly defaults: RuntimeDefaults;
  readonly crash?: CrashHook;
  readonly now?: () => number;
  readonly newSessionId?: () => string;
  /** Waits between CAS attempts (default a timer); injected so tests see the backoff without waiting. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1) (default `Math.random`). */
  readonly random?: () => number;
  /** Where transition and session spans go (default off). */
  readonly tracing?: Tracing;
}

/** Counters a coordinator reports in its `$SRV` stats. */
export interface CoordinatorStats {
  submitted: number;
  rejected: number;
  applied: number;
  dropped: number;
  /** Results from a role other than the one the awaited task went to (also in `dropped`). */
  forged: number;
  duplicates: number;
  conflicts: number;
  republished: number;
  /**
   * Results and timers of tasks minted at a version above the stored one: the store lost the commit
   * that dispatched them (a failover without the replica wait); dropped, never applied (also in `dropped`).
   */
  lost_version: number;
  timers_fired: number;
}

/** How many times one inbox message is re-stepped after losing compare-and-set races. */
const MAX_CAS_ATTEMPTS = 25;
/** First and largest wait between CAS attempts (ms): all 25 attempts stay well inside the inbox lease. */
export const CAS_BACKOFF = { baseMs: 5, capMs: 200 } as const;

/**
 * The wait before CAS attempt `attempt + 1`: exponential from `baseMs`, capped at `capMs`, with
 * full jitter (uniform in [0, that]) so coordinators that collided once do not collide again in step.
 */
export function casBackoffMs(attempt: number, random: () => number): number {
  const ceiling = Math.min(CAS_BACKOFF.capMs, CAS_BACKOFF.baseMs * 2 ** attempt);
  return Math.floor(ceiling * Math.min(Math.max(random(), 0), 1));
}

/**
 * What a transition-log line keeps of its input: the input itself when its JSON is short, else
 * a summary naming it (kind, ids, the outcome's code) and its size. A result can be 256 KB and a
 * session has up to 1,000 lines, so the raw input would make the log the largest thing stored.
 */
export function logInput(input: InboxInput): unknown {
  const json = JSON.stringify(input);
  if (json.length <= LIMITS.maxLogInputChars) return input;
  const base = { kind: input.kind, input_id: input.input_id, truncated: true, chars: json.length };
  switch (input.kind) {
    case "result":
      return {
        ...base,
        task_id: input.task_id,
        role: input.role,
        op: input.op,
        ok: input.outcome.ok,
        ...(input.outcome.ok ? {} : { code: input.outcome.error.code }),
      };
    case "timer":
      return { ...base, task_id: input.task_id, reason: input.reason };
    case "start":
      return { ...base, workflow: input.workflow, query: input.query.slice(0, 200) };
    case "user_reply":
      return { ...base, text: input.text.slice(0, 200) };
    case "cancel":
      return { ...base, reason: input.reason.slice(0, 200) };
  }
}

/** A log line's commands, bounded like its input (a fan-out can dispatch many tasks at once). */
const logCommands = (commands: readonly string[]): string[] => {
  const kept = commands.slice(0, 64).map((c) => c.slice(0, 300));
  return commands.length > kept.length ? [...kept, `… ${commands.length - kept.length} more`] : kept;
};

/**
 * The version a result's or timer's task was minted at, when that is above the stored version:
 * the commit that dispatched it is gone (docs/redis-failover.md). Null otherwise.
 */
export function lostVersion(input: InboxInput, storedVersion: number): number | null {
  if ((input.kind !== "result" && input.kind !== "timer") || input.task_id === null) return null;
  const t = parseTaskId(input.task_id);
  return t !== null && t.version > storedVersion ? t.version : null;
}

const timerSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The coordinator's logic, independent of how messages arrive: submit, step one inbox input,
 * fire due timers. It keeps no per-session state between calls.
 */
export function createCoordinatorCore(deps: CoordinatorCoreDeps) {
  const { store, publisher, defaults } = deps;
  const now = deps.now ?? Date.now;
  const crash = deps.crash ?? (() => {});
  const newSessionId = deps.newSessionId ?? (() => randomUUID().replaceAll("-", ""));
  const sleep = deps.sleep ?? timerSleep;
  const random = deps.random ?? Math.random;
  const spans = sessionSpans(deps.tracing ?? TRACING_OFF);
  const stats: CoordinatorStats = {
    submitted: 0,
    rejected: 0,
    applied: 0,
    dropped: 0,
    forged: 0,
    duplicates: 0,
    conflicts: 0,
    republished: 0,
    lost_version: 0,
    timers_fired: 0,
  };

  const reject = (
    code: "invalid_query" | "invalid_message" | "unsupported_version" | "unknown_thread" | "payload_too_large",
    message: string,
  ): SubmitReply => {
    stats.rejected++;
    deps.log.info({ code, msg: message }, "submit rejected");
    return {
      v: SCHEMA_VERSION,
      ok: false,
      error: new AgentmeshError(code, message, { component: "coordinator" }).toWire(),
    };
  };

  /**
   * Validates a query, creates the session once per idempotency key, and kicks it off. In a
   * thread, the session receives the thread's earlier turns; and when the thread's latest session
   * waits for a person, the query is that session's reply instead of a new session.
   */
  async function submit(body: unknown, ctx: SubmitContext = {}): Promise<SubmitReply> {
    const v = (body as { v?: unknown } | null)?.v;
    if (body !== null && typeof body === "object" && v !== undefined && v !== SCHEMA_VERSION) {
      return reject(
        "unsupported_version",
        `schema version ${JSON.stringify(v)} is not supported (expected ${SCHEMA_VERSION})`,
      );
    }
    const parsed = SubmitRequest.safeParse(body);
    if (!parsed.success) return reject("invalid_message", `bad submit request: ${formatZodError(parsed.error)}`);
    const query = checkQuery(parsed.data.query);
    if (!query.ok) return reject("invalid_query", query.reason);
    const misplaced = misplacedOption(parsed.data.workflow, parsed.data.options);
    if (misplaced) return reject("invalid_message", misplaced.message);
    const req = parsed.data;
    const owner = req.owner ?? null;
    let threadId = req.thread_id ?? null;
    let thread: Thread | null = null;
    // A retried submit means what the first one did, whatever the thread's state is now: the
    // session it created (whose thread it keeps: a gateway proposes a new thread each time), or
    // the waiting session it answered.
    const earlier =
      threadId === null || req.idempotency_key === undefined
        ? null
        : await store.peekIdempotencyKey(req.idempotency_key);
    const retried = earlier === null ? null : ((await store.load(earlier))?.state ?? null);
    if (retried !== null) {
      threadId = retried.meta.thread_id;
      // Past its start (or an answered session): nothing to redo. At version 0 the first attempt may
      // have stopped before its start went out, so the normal path below runs again (all idempotent).
      if (retried.meta.version > 0) return accepted(retried.meta.session_id, false, threadId, false);
      thread = threadId === null ? null : await store.loadThread(threadId);
    } else if (threadId !== null) {
      thread = await store.loadThread(threadId);
      if (thread !== null && thread.owner !== owner) return reject("unknown_thread", `no thread ${threadId}`);
      const waiting = thread === null ? null : await waitingSession(thread);
      if (waiting !== null) return replyInThread(waiting, query.query, threadId, req.idempotency_key);
    }
    const proposed = retried?.meta.session_id ?? req.session_id ?? newSessionId();
    const idempotencyKey = req.idempotency_key ?? proposed;
    const sessionId = await store.claimIdempotencyKey(idempotencyKey, proposed);
    const earlierTurns = thread === null ? null : await threadConversation(thread, sessionId);
    const messages = boundConversation(req.messages ?? earlierTurns?.messages ?? []);
    // what the thread's latest session hands on (clarify's count) holds whoever gave the turns
    const carry = earlierTurns?.carry ?? null;
    const start: InboxInput = {
      v: SCHEMA_VERSION,
      kind: "start",
      session_id: sessionId,
      input_id: inputIds.start(sessionId),
      workflow: req.workflow,
      query: query.query,
      options: req.options,
      ...(messages.length ? { messages } : {}),
      ...(carry ? { carry } : {}),
    };
    // Checked before the session exists: a start the bus refuses would leave it waiting for nothing.
    const startBytes = new TextEncoder().encode(JSON.stringify(start)).byteLength;
    if (startBytes > LIMITS.maxMessageBytes) {
      return reject(
        "payload_too_large",
        `the session's start (query, options and attachments, earlier turns) is ${startBytes} bytes, over the ${LIMITS.maxMessageBytes}-byte message limit; send less`,
      );
    }
    const trace = mintSessionTrace(ctx.traceparent);
    const state = createSession({
      sessionId,
      workflow: req.workflow,
      query: query.query,
      options: req.options,
      now: now(),
      defaults,
      owner,
      threadId,
      messages,
      trace,
      ...(carry ? { carry } : {}),
    });
    // The key then expires with the session: a retry after the session is gone starts a new one
    // under a new id instead of re-running the old id.
    const created = await store.create(state, idempotencyKey);
    if (threadId !== null) {
      // After create: a crash in between leaves a session outside its thread, which the client's retry attaches.
      const attached = await store.attachToThread(threadId, owner, sessionId, now());
      if (!attached.ok) return reject("unknown_thread", `no thread ${threadId}`);
    }
    // The replicas must hold the session before its start goes out: a failover that lost it would
    // leave the start naming no session, dropped, and the session lost while the client was told
    // it was accepted. A failed wait fails the submit; the client's retry (same idempotency key)
    // waits again, covering the stored session too (docs/redis-failover.md).
    await store.awaitReplicas();
    // A retried submit (not created) keeps the stored session's trace; its start message is a duplicate anyway.
    await publisher.publishInbox(start, { traceparent: created ? rootTraceparent(state) : undefined, threadId });
    stats.submitted++;
    deps.log.info({ session_id: sessionId, created, workflow: req.workflow, thread_id: threadId }, "session submitted");
    return accepted(sessionId, created, threadId, false);
  }

  const accepted = (sessionId: string, created: boolean, threadId: string | null, replied: boolean): SubmitReply => ({
    v: SCHEMA_VERSION,
    ok: true,
    session_id: sessionId,
    created,
    thread_id: threadId,
    replied,
  });

  /** The thread's latest session when it waits for a person, else null. */
  async function waitingSession(thread: Thread): Promise<string | null> {
    const last = thread.sessions.at(-1);
    if (last === undefined) return null;
    const loaded = await store.load(last);
    return loaded?.state.meta.status === "awaiting_user" ? last : null;
  }

  /**
   * The query as the waiting session's reply. Its input id comes from the idempotency key, so a
   * retried request is applied once; the key is claimed for the waiting session, so a retry finds it.
   */
  async function replyInThread(
    sessionId: string,
    text: string,
    threadId: string,
    idempotencyKey: string | undefined,
  ): Promise<SubmitReply> {
    let id: string = randomUUID();
    if (idempotencyKey !== undefined) {
      await store.claimIdempotencyKey(idempotencyKey, sessionId);
      id = createHash("sha256").update(idempotencyKey).digest("hex").slice(0, 32);
    }
    await publisher.publishInbox({
      v: SCHEMA_VERSION,
      kind: "user_reply",
      session_id: sessionId,
      input_id: inputIds.user(id),
      text,
    });
    deps.log.info(
      { session_id: sessionId, thread_id: threadId },
      "thread message went to the waiting session as its reply",
    );
    return accepted(sessionId, false, threadId, true);
  }

  /**
   * The thread's earlier turns, oldest first: each session's question, and its answer once it has
   * one; and what its latest session hands on (clarify's count), null when nothing.
   */
  async function threadConversation(
    thread: Thread,
    current: string,
  ): Promise<{ messages: ChatMessage[]; carry: ThreadCarry | null }> {
    // The latest sessions are enough: the conversation keeps at most maxConversationMessages turns.
    const recent = thread.sessions
      .filter((sid) => sid !== current)
      .slice(-Math.ceil(LIMITS.maxConversationMessages / 2));
    const loaded = await Promise.all(recent.map((sid) => store.load(sid)));
    const out: ChatMessage[] = [];
    let carry: ThreadCarry | null = null;
    for (const l of loaded) {
      if (!l) continue; // expired: its turns are gone with it
      const turn = conversationTurn(l.state);
      out.push({ role: "user", content: turn.question });
      if (turn.answer !== null) out.push({ role: "assistant", content: turn.answer });
      const handed = threadCarry(l.state);
      // the latest session that has something to hand on wins: the count lives as long as the thread
      if (handed.clarification_count !== null) carry = handed;
    }
    return { messages: out, carry };
  }

  /**
   * A timer whose input is dropped will never be cleared by a commit: remove it so it stops
   * firing. A session timer is removed only when its session is gone or finished: a stale one
   * (the session paused, then resumed with a re-armed deadline) shares the member of the live one.
   */
  async function retireTimer(input: InboxInput, why: "unknown_session" | string): Promise<void> {
    if (input.kind !== "timer") return;
    if (input.task_id) await store.removeTimers([timerMember.task(input.task_id)]);
    else if (why === "unknown_session" || why === "terminal")
      await store.removeTimers([timerMember.session(input.session_id)]);
  }

  /**
   * Publishes an outbox and clears it. First the replicas must hold the commit that wrote it (a
   * no-op on a single node): a failover may otherwise promote a replica without it, and the tasks
   * and events out already would belong to a version the store lost (docs/redis-failover.md).
   * A failed wait throws, so the input is redelivered and the stored outbox published then.
   */
  async function flush(sessionId: string, outbox: Outbox, threadId: string | null): Promise<void> {
    await store.awaitReplicas();
    crash("after-wait-before-publish");
    await publisher.publishOutbox(outbox.entries, { traceparent: outbox.traceparent, threadId });
    crash("after-publish");
    await store.clearOutbox(sessionId, outbox.version);
  }

  /**
   * Steps a session with one inbox input: load, (re)publish any pending outbox, skip what was
   * applied, step, commit in one CAS, publish, clear. Returns "retry" only when CAS kept losing.
   */
  async function handleInput(input: InboxInput): Promise<"ack" | "retry"> {
    const sid = input.session_id;
    // On each line instead of a child logger per input: most inputs log nothing, and a child costs CPU.
    const ids = { session_id: sid, input_id: input.input_id };
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      // The state, a pending outbox and whether this input was applied, in one read.
      const loaded = await store.loadForInput(sid, input.input_id);
      crash("after-load");
      if (!loaded) {
        stats.dropped++;
        deps.log.warn({ ...ids, kind: input.kind }, "dropped: unknown session");
        await retireTimer(input, "unknown_session");
        return "ack";
      }
      if (loaded.outbox) {
        // A crash between CAS and publish left this unpublished; publishing again is safe (de-dup ids).
        stats.republished++;
        spans.republished(loaded.state, loaded.outbox);
        await flush(sid, loaded.outbox, loaded.state.meta.thread_id);
      }
      if (loaded.applied) {
        stats.duplicates++;
        deps.log.debug(ids, "already applied");
        return "ack";
      }
      const at = now();
      const out = step(loaded.state, input, { now: at, defaults });
      if (out.kind === "drop") {
        stats.dropped++;
        const lost = lostVersion(input, loaded.state.meta.version);
        if (lost !== null) {
          stats.lost_version++;
          deps.log.warn(
            { ...ids, task_version: lost, stored_version: loaded.state.meta.version },
            "dropped: the task was dispatched by a commit the store no longer has (a Redis failover lost it); the session goes on from the stored version",
          );
        } else if (out.reason === "wrong_sender") {
          stats.forged++;
          deps.log.warn({ ...ids, reason: out.reason, detail: out.detail }, "dropped a result from the wrong sender");
        } else deps.log.info({ ...ids, reason: out.reason, detail: out.detail }, "dropped input");
        await retireTimer(input, out.reason);
        return "ack";
      }
      const version = out.state.meta.version;
      // The transition's span is started before the CAS: its id goes into the stored outbox, so
      // the tasks name it as their parent even when another coordinator publishes them.
      const span = spans.transition(loaded.state, out.state, input, out.spanAttributes);
      const traceparent = span.traceparent ?? rootTraceparent(out.state);
      const outbox: Outbox = {
        version,
        entries: [...out.outbox],
        ...(traceparent === undefined ? {} : { traceparent }),
      };
      let res: Awaited<ReturnType<SessionStore["commit"]>>;
      try {
        res = await store.commit({
          sessionId: sid,
          expectedVersion: loaded.state.meta.version,
          state: out.state,
          inputId: input.input_id,
          outbox,
          log: {
            version,
            input_id: input.input_id,
            input: logInput(input),
            now: at,
            commands: logCommands(out.commands),
            status: out.state.meta.status,
          },
          terminal: isTerminal(out.state.meta.status),
          timers: out.timers,
          clearTimers: out.clearTimers,
        });
      } catch (err) {
        span.fail(err);
        span.end();
        throw err;
      }
      if (!res.ok) {
        span.setAttributes({ "agentmesh.outcome": res.reason });
        span.end();
        if (res.reason === "missing") return "ack";
        if (res.reason === "conflict") {
          // Another coordinator moved the session: back off before re-loading, or 25 tight retries burn out in milliseconds.
          stats.conflicts++;
          await sleep(casBackoffMs(attempt, random));
        }
        continue; // already_applied: the next pass acks
      }
      crash("after-cas");
      crash("after-cas-before-wait");
      stats.applied++;
      deps.log.debug({ ...ids, version, status: out.state.meta.status, commands: out.commands }, "applied");
      try {
        await flush(sid, outbox, out.state.meta.thread_id);
      } catch (err) {
        // the outbox stays stored: whoever re-publishes it writes this span under its id
        span.fail(err);
        throw err;
      }
      span.end();
      if (isTerminal(out.state.meta.status)) spans.ended(out.state);
      return "ack";
    }
    deps.log.warn(ids, "gave up after repeated CAS conflicts; will be redelivered");
    return "retry";
  }

  /** Claims due deadlines and turns each into a timer inbox message (fires once across coordinators). */
  async function fireDueTimers(limit = 100): Promise<number> {
    const members = await store.claimDueTimers(now(), limit);
    for (const member of members) {
      const t = parseTimerMember(member);
      if (!t) {
        // Nothing can ever fire or clear it: remove it now, or it comes due again every lease and warns forever.
        await store.removeTimers([member]);
        deps.log.warn({ member }, "removed unreadable timer member");
        continue;
      }
      const input: InboxInput =
        t.kind === "task"
          ? {
              v: SCHEMA_VERSION,
              kind: "timer",
              session_id: t.sessionId,
              input_id: inputIds.timer(t.taskId),
              task_id: t.taskId,
              reason: "task_deadline",
            }
          : {
              v: SCHEMA_VERSION,
              kind: "timer",
              session_id: t.sessionId,
              input_id: inputIds.timer(`session.${t.sessionId}`),
              task_id: null,
              reason: "session_deadline",
            };
      await publisher.publishInbox(input);
      stats.timers_fired++;
    }
    return members.length;
  }

  return { submit, handleInput, fireDueTimers, stats };
}

export type CoordinatorCore = ReturnType<typeof createCoordinatorCore>;
