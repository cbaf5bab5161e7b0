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
  newSessionId,
  newUserInputId,
  parseTaskId,
  parseTimerMember,
  timerMember,
  threadCarry,
  isTerminal,
  longTermRefsOf,
  AgentmeshError,
  formatZodError,
  type ChatMessage,
  type InboxInput,
  type Outbox,
  type SessionState,
  type SubmitReply,
  type Thread,
  type ThreadCarry,
} from "@agentmesh/contracts";
import type { CommitResult, SessionStore } from "@agentmesh/session-store";
import type { CrashHook } from "@agentmesh/messaging";
import { createSession, step, type RuntimeDefaults, type StepOutcome } from "@agentmesh/workflows";
import { TRACING_OFF, type Logger, type SpanHandle, type Tracing } from "@agentmesh/service-kit";
import { mintSessionTrace, rootTraceparent, sessionSpans, type SessionSpans } from "./trace.js";

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

/** What the coordinator's functions share: its ports and settings with their defaults filled in, and its counters. */
interface CoreContext {
  readonly store: SessionStore;
  readonly publisher: CoordinatorPublisher;
  readonly log: Logger;
  readonly defaults: RuntimeDefaults;
  readonly now: () => number;
  readonly crash: CrashHook;
  readonly newSessionId: () => string;
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
  readonly spans: SessionSpans;
  readonly stats: CoordinatorStats;
}

/** The context of a coordinator from its deps, with zeroed counters. */
function coreContext(deps: CoordinatorCoreDeps): CoreContext {
  return {
    store: deps.store,
    publisher: deps.publisher,
    log: deps.log,
    defaults: deps.defaults,
    now: deps.now ?? Date.now,
    crash: deps.crash ?? (() => {}),
    newSessionId: deps.newSessionId ?? newSessionId,
    sleep: deps.sleep ?? timerSleep,
    random: deps.random ?? Math.random,
    spans: sessionSpans(deps.tracing ?? TRACING_OFF),
    stats: {
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
    },
  };
}

/**
 * The coordinator's logic, independent of how messages arrive: submit, step one inbox input,
 * fire due timers. It keeps no per-session state between calls.
 */
export function createCoordinatorCore(deps: CoordinatorCoreDeps) {
  const core = coreContext(deps);
  return {
    /** Validates a query and starts its session, or hands it to its thread's waiting session. */
    submit: (body: unknown, ctx: SubmitContext = {}): Promise<SubmitReply> => submitSession(core, body, ctx),
    /** Steps a session with one inbox input; "retry" only when CAS kept losing. */
    handleInput: (input: InboxInput): Promise<"ack" | "retry"> => handleInput(core, input),
    /** Claims due deadlines and turns each into a timer inbox message; returns how many it claimed. */
    fireDueTimers: (limit = 100): Promise<number> => fireDueTimers(core, limit),
    stats: core.stats,
  };
}

export type CoordinatorCore = ReturnType<typeof createCoordinatorCore>;

/** Counts and logs a refused submit, and the reply that says why. */
function reject(
  core: CoreContext,
  code: "invalid_query" | "invalid_message" | "unsupported_version" | "unknown_thread" | "payload_too_large",
  message: string,
): SubmitReply {
  core.stats.rejected++;
  core.log.info({ code, msg: message }, "submit rejected");
  return {
    v: SCHEMA_VERSION,
    ok: false,
    error: new AgentmeshError(code, message, { component: "coordinator" }).toWire(),
  };
}

/** The reply to an accepted submit. */
const accepted = (sessionId: string, created: boolean, threadId: string | null, replied: boolean): SubmitReply => ({
  v: SCHEMA_VERSION,
  ok: true,
  session_id: sessionId,
  created,
  thread_id: threadId,
  replied,
});

/** Either what a submit answers already (a rejection, a retry's earlier answer, a reply in a thread), or what it goes on with. */
type Answered<T> = { readonly reply: SubmitReply } | ({ readonly reply: null } & T);

/**
 * Validates a query, creates the session once per idempotency key, and kicks it off. In a
 * thread, the session receives the thread's earlier turns; and when the thread's latest session
 * waits for a person, the query is that session's reply instead of a new session.
 */
async function submitSession(core: CoreContext, body: unknown, ctx: SubmitContext): Promise<SubmitReply> {
  const checked = checkSubmit(core, body);
  if (checked.reply !== null) return checked.reply;
  const { req, query } = checked;
  const owner = req.owner ?? null;
  const placed = await placeInThread(core, req, query, owner);
  if (placed.reply !== null) return placed.reply;
  const { threadId, thread, retried } = placed;
  const proposed = retried?.meta.session_id ?? req.session_id ?? core.newSessionId();
  const idempotencyKey = req.idempotency_key ?? proposed;
  const sessionId = await core.store.claimIdempotencyKey(idempotencyKey, proposed);
  const earlierTurns = thread === null ? null : await threadConversation(core, thread, sessionId);
  const messages = boundConversation(req.messages ?? earlierTurns?.messages ?? []);
  // what the thread hands on (clarify's count, its long-term references) holds whoever gave the turns
  const refs = thread === null ? [] : await core.store.loadThreadRefs(thread.thread_id);
  const carry = withThreadRefs(earlierTurns?.carry ?? null, refs);
  const start = startInput(sessionId, req, query, messages, carry);
  // Checked before the session exists: a start the bus refuses would leave it waiting for nothing.
  const startBytes = new TextEncoder().encode(JSON.stringify(start)).byteLength;
  if (startBytes > LIMITS.maxMessageBytes) {
    return reject(
      core,
      "payload_too_large",
      `the session's start (query, options and attachments, earlier turns) is ${startBytes} bytes, over the ${LIMITS.maxMessageBytes}-byte message limit; send less`,
    );
  }
  const trace = mintSessionTrace(ctx.traceparent);
  const state = createSession({
    sessionId,
    workflow: req.workflow,
    query,
    options: req.options,
    now: core.now(),
    defaults: core.defaults,
    owner,
    threadId,
    messages,
    trace,
    ...(carry ? { carry } : {}),
  });
  // The key then expires with the session: a retry after the session is gone starts a new one
  // under a new id instead of re-running the old id.
  const created = await core.store.create(state, idempotencyKey);
  if (threadId !== null) {
    // After create: a crash in between leaves a session outside its thread, which the client's retry attaches.
    const attached = await core.store.attachToThread(threadId, owner, sessionId, core.now());
    if (!attached.ok) return reject(core, "unknown_thread", `no thread ${threadId}`);
  }
  // The replicas must hold the session before its start goes out: a failover that lost it would
  // leave the start naming no session, dropped, and the session lost while the client was told
  // it was accepted. A failed wait fails the submit; the client's retry (same idempotency key)
  // waits again, covering the stored session too (docs/redis-failover.md).
  await core.store.awaitReplicas();
  // A retried submit (not created) keeps the stored session's trace; its start message is a duplicate anyway.
  await core.publisher.publishInbox(start, { traceparent: created ? rootTraceparent(state) : undefined, threadId });
  core.stats.submitted++;
  core.log.info({ session_id: sessionId, created, workflow: req.workflow, thread_id: threadId }, "session submitted");
  return accepted(sessionId, created, threadId, false);
}

/** Checks a submit body's schema version, then its shape, query and options: the request and its query, or the rejection. */
function checkSubmit(core: CoreContext, body: unknown): Answered<{ req: SubmitRequest; query: string }> {
  const v = (body as { v?: unknown } | null)?.v;
  if (body !== null && typeof body === "object" && v !== undefined && v !== SCHEMA_VERSION) {
    const message = `schema version ${JSON.stringify(v)} is not supported (expected ${SCHEMA_VERSION})`;
    return { reply: reject(core, "unsupported_version", message) };
  }
  const parsed = SubmitRequest.safeParse(body);
  if (!parsed.success) {
    return { reply: reject(core, "invalid_message", `bad submit request: ${formatZodError(parsed.error)}`) };
  }
  const query = checkQuery(parsed.data.query, parsed.data.workflow);
  if (!query.ok) return { reply: reject(core, "invalid_query", query.reason) };
  const misplaced = misplacedOption(parsed.data.workflow, parsed.data.options);
  if (misplaced) return { reply: reject(core, "invalid_message", misplaced.message) };
  return { reply: null, req: parsed.data, query: query.query };
}

/**
 * The submit's thread and what an earlier attempt of it did (`retried`: the session it created, still
 * at version 0). Answered already when that attempt got past its start, when the thread is another
 * owner's, and when the thread's latest session waits for a person (the query goes to it as its reply).
 */
async function placeInThread(
  core: CoreContext,
  req: SubmitRequest,
  query: string,
  owner: string | null,
): Promise<Answered<{ threadId: string | null; thread: Thread | null; retried: SessionState | null }>> {
  let threadId = req.thread_id ?? null;
  let thread: Thread | null = null;
  // A retried submit means what the first one did, whatever the thread's state is now: the
  // session it created (whose thread it keeps: a gateway proposes a new thread each time), or
  // the waiting session it answered.
  const earlier =
    threadId === null || req.idempotency_key === undefined
      ? null
      : await core.store.peekIdempotencyKey(req.idempotency_key);
  const retried = earlier === null ? null : ((await core.store.load(earlier))?.state ?? null);
  if (retried !== null) {
    threadId = retried.meta.thread_id;
    // Past its start (or an answered session): nothing to redo. At version 0 the first attempt may
    // have stopped before its start went out, so the normal path below runs again (all idempotent).
    if (retried.meta.version > 0) return { reply: accepted(retried.meta.session_id, false, threadId, false) };
    thread = threadId === null ? null : await core.store.loadThread(threadId);
  } else if (threadId !== null) {
    thread = await core.store.loadThread(threadId);
    if (thread !== null && thread.owner !== owner) {
      return { reply: reject(core, "unknown_thread", `no thread ${threadId}`) };
    }
    const waiting = thread === null ? null : await waitingSession(core, thread);
    if (waiting !== null) return { reply: await replyInThread(core, waiting, query, threadId, req.idempotency_key) };
  }
  return { reply: null, threadId, thread, retried };
}

/** The start inbox message of a new session. */
function startInput(
  sessionId: string,
  req: SubmitRequest,
  query: string,
  messages: ChatMessage[],
  carry: ThreadCarry | null,
): InboxInput {
  return {
    v: SCHEMA_VERSION,
    kind: "start",
    session_id: sessionId,
    input_id: inputIds.start(sessionId),
    workflow: req.workflow,
    query,
    options: req.options,
    ...(messages.length ? { messages } : {}),
    ...(carry ? { carry } : {}),
  };
}

/** What a new session of a thread receives: its latest session's carry with the thread's long-term references. */
function withThreadRefs(carry: ThreadCarry | null, refs: readonly string[]): ThreadCarry | null {
  if (refs.length === 0) return carry;
  return { clarification_count: carry?.clarification_count ?? null, long_term_refs: [...refs] };
}

/**
 * Keeps a finished session's long-term references for its thread (docs/workflows/blackboard.md).
 * Idempotent, so a redelivered input of a session that ended writes the same again.
 */
async function keepThreadRefs(core: CoreContext, state: SessionState): Promise<void> {
  const threadId = state.meta.thread_id;
  const refs = longTermRefsOf(state);
  if (threadId === null || refs.length === 0 || !isTerminal(state.meta.status)) return;
  const kept = await core.store.keepThreadRefs(threadId, state.meta.owner, refs);
  if (!kept)
    core.log.info(
      { session_id: state.meta.session_id, thread_id: threadId },
      "the thread is gone or another owner's: the session's long-term references were not kept",
    );
}

/** The thread's latest session when it waits for a person, else null. */
async function waitingSession(core: CoreContext, thread: Thread): Promise<string | null> {
  const last = thread.sessions.at(-1);
  if (last === undefined) return null;
  const loaded = await core.store.load(last);
  return loaded?.state.meta.status === "awaiting_user" ? last : null;
}

/**
 * The query as the waiting session's reply. Its input id comes from the idempotency key, so a
 * retried request is applied once; the key is claimed for the waiting session, so a retry finds it.
 */
async function replyInThread(
  core: CoreContext,
  sessionId: string,
  text: string,
  threadId: string,
  idempotencyKey: string | undefined,
): Promise<SubmitReply> {
  let inputId = newUserInputId();
  if (idempotencyKey !== undefined) {
    await core.store.claimIdempotencyKey(idempotencyKey, sessionId);
    inputId = inputIds.user(createHash("sha256").update(idempotencyKey).digest("hex").slice(0, 32));
  }
  await core.publisher.publishInbox({
    v: SCHEMA_VERSION,
    kind: "user_reply",
    session_id: sessionId,
    input_id: inputId,
    text,
  });
  core.log.info(
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
  core: CoreContext,
  thread: Thread,
  current: string,
): Promise<{ messages: ChatMessage[]; carry: ThreadCarry | null }> {
  // The latest sessions are enough: the conversation keeps at most maxConversationMessages turns.
  const recent = thread.sessions.filter((sid) => sid !== current).slice(-Math.ceil(LIMITS.maxConversationMessages / 2));
  const loaded = await Promise.all(recent.map((sid) => core.store.load(sid)));
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
async function retireTimer(core: CoreContext, input: InboxInput, why: "unknown_session" | string): Promise<void> {
  if (input.kind !== "timer") return;
  if (input.task_id) await core.store.removeTimers([timerMember.task(input.task_id)]);
  else if (why === "unknown_session" || why === "terminal")
    await core.store.removeTimers([timerMember.session(input.session_id)]);
}

/**
 * Publishes an outbox and clears it. First the replicas must hold the commit that wrote it (a
 * no-op on a single node): a failover may otherwise promote a replica without it, and the tasks
 * and events out already would belong to a version the store lost (docs/redis-failover.md).
 * A failed wait throws, so the input is redelivered and the stored outbox published then.
 */
async function flush(core: CoreContext, sessionId: string, outbox: Outbox, threadId: string | null): Promise<void> {
  await core.store.awaitReplicas();
  core.crash("after-wait-before-publish");
  await core.publisher.publishOutbox(outbox.entries, { traceparent: outbox.traceparent, threadId });
  core.crash("after-publish");
  await core.store.clearOutbox(sessionId, outbox.version);
}

/**
 * Steps a session with one inbox input: load, (re)publish any pending outbox, skip what was
 * applied, step, commit in one CAS, publish, clear. Returns "retry" only when CAS kept losing.
 */
async function handleInput(core: CoreContext, input: InboxInput): Promise<"ack" | "retry"> {
  const sid = input.session_id;
  // On each line instead of a child logger per input: most inputs log nothing, and a child costs CPU.
  const ids = { session_id: sid, input_id: input.input_id };
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    // The state, a pending outbox and whether this input was applied, in one read.
    const loaded = await core.store.loadForInput(sid, input.input_id);
    core.crash("after-load");
    if (!loaded) {
      core.stats.dropped++;
      core.log.warn({ ...ids, kind: input.kind }, "dropped: unknown session");
      await retireTimer(core, input, "unknown_session");
      return "ack";
    }
    if (loaded.outbox) {
      // A crash between CAS and publish left this unpublished; publishing again is safe (de-dup ids).
      core.stats.republished++;
      core.spans.republished(loaded.state, loaded.outbox);
      await flush(core, sid, loaded.outbox, loaded.state.meta.thread_id);
    }
    if (loaded.applied) {
      core.stats.duplicates++;
      core.log.debug(ids, "already applied");
      // the commit that ended the session may not have been followed by its references' write
      await keepThreadRefs(core, loaded.state);
      return "ack";
    }
    const at = core.now();
    const out = step(loaded.state, input, { now: at, defaults: core.defaults });
    if (out.kind === "drop") {
      await dropInput(core, input, loaded.state.meta.version, out);
      return "ack";
    }
    const { res, span, outbox } = await commitTransition(core, input, loaded.state, out, at);
    if (!res.ok) {
      span.setAttributes({ "agentmesh.outcome": res.reason });
      span.end();
      if (res.reason === "missing") return "ack";
      if (res.reason === "conflict") {
        // Another coordinator moved the session: back off before re-loading, or 25 tight retries burn out in milliseconds.
        core.stats.conflicts++;
        await core.sleep(casBackoffMs(attempt, core.random));
      }
      continue; // already_applied: the next pass acks
    }
    core.crash("after-cas");
    core.crash("after-cas-before-wait");
    core.stats.applied++;
    const { version, status } = out.state.meta;
    core.log.debug({ ...ids, version, status, commands: out.commands }, "applied");
    // before the publish, whose replica wait then covers this write too
    await keepThreadRefs(core, out.state);
    await publishTransition(core, sid, outbox, out.state, span);
    return "ack";
  }
  core.log.warn(ids, "gave up after repeated CAS conflicts; will be redelivered");
  return "retry";
}

/** Counts and logs a dropped input, telling a task of a lost commit and a forged result from the rest, and retires its timer. */
async function dropInput(
  core: CoreContext,
  input: InboxInput,
  storedVersion: number,
  out: Extract<StepOutcome, { kind: "drop" }>,
): Promise<void> {
  const ids = { session_id: input.session_id, input_id: input.input_id };
  core.stats.dropped++;
  const lost = lostVersion(input, storedVersion);
  if (lost !== null) {
    core.stats.lost_version++;
    core.log.warn(
      { ...ids, task_version: lost, stored_version: storedVersion },
      "dropped: the task was dispatched by a commit the store no longer has (a Redis failover lost it); the session goes on from the stored version",
    );
  } else if (out.reason === "wrong_sender") {
    core.stats.forged++;
    core.log.warn({ ...ids, reason: out.reason, detail: out.detail }, "dropped a result from the wrong sender");
  } else core.log.info({ ...ids, reason: out.reason, detail: out.detail }, "dropped input");
  await retireTimer(core, input, out.reason);
}

/**
 * Commits a step in one CAS (state, applied marker, outbox, log line, timers) over the version it
 * was stepped from. Returns the result with the transition's span, still open, and the outbox.
 */
async function commitTransition(
  core: CoreContext,
  input: InboxInput,
  prev: SessionState,
  out: Extract<StepOutcome, { kind: "apply" }>,
  at: number,
): Promise<{ res: CommitResult; span: SpanHandle; outbox: Outbox }> {
  const version = out.state.meta.version;
  // The transition's span is started before the CAS: its id goes into the stored outbox, so
  // the tasks name it as their parent even when another coordinator publishes them.
  const span = core.spans.transition(prev, out.state, input, out.spanAttributes);
  const traceparent = span.traceparent ?? rootTraceparent(out.state);
  const outbox: Outbox = {
    version,
    entries: [...out.outbox],
    ...(traceparent === undefined ? {} : { traceparent }),
  };
  try {
    const res = await core.store.commit({
      sessionId: input.session_id,
      expectedVersion: prev.meta.version,
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
    return { res, span, outbox };
  } catch (err) {
    span.fail(err);
    span.end();
    throw err;
  }
}

/** Publishes a committed transition's outbox, then ends its span, and the session's root span when it finished. */
async function publishTransition(
  core: CoreContext,
  sessionId: string,
  outbox: Outbox,
  state: SessionState,
  span: SpanHandle,
): Promise<void> {
  try {
    await flush(core, sessionId, outbox, state.meta.thread_id);
  } catch (err) {
    // the outbox stays stored: whoever re-publishes it writes this span under its id
    span.fail(err);
    throw err;
  }
  span.end();
  if (isTerminal(state.meta.status)) core.spans.ended(state);
}

/** Claims due deadlines and turns each into a timer inbox message (fires once across coordinators). */
async function fireDueTimers(core: CoreContext, limit: number): Promise<number> {
  const members = await core.store.claimDueTimers(core.now(), limit);
  for (const member of members) {
    const t = parseTimerMember(member);
    if (!t) {
      // Nothing can ever fire or clear it: remove it now, or it comes due again every lease and warns forever.
      await core.store.removeTimers([member]);
      core.log.warn({ member }, "removed unreadable timer member");
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
            input_id: inputIds.sessionTimer(t.sessionId),
            task_id: null,
            reason: "session_deadline",
          };
    await core.publisher.publishInbox(input);
    core.stats.timers_fired++;
  }
  return members.length;
}
