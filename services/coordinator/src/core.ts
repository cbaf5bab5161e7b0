import { randomUUID } from "node:crypto";
import {
  SCHEMA_VERSION, SubmitRequest, checkQuery, inputIds, isTerminal, AgentmeshError, formatZodError,
  type InboxInput, type Outbox, type SubmitReply,
} from "@agentmesh/contracts";
import type { SessionStore } from "@agentmesh/session-store";
import type { CrashHook } from "@agentmesh/messaging";
import { createSession, parseTimerMember, step, timerMember, type RuntimeDefaults } from "@agentmesh/workflows";
import type { Logger } from "@agentmesh/service-kit";

/** The publishing side the coordinator needs (implemented over JetStream by messaging). */
export interface CoordinatorPublisher {
  publishInbox(input: InboxInput): Promise<void>;
  publishOutbox(entries: Outbox["entries"]): Promise<void>;
}

export interface CoordinatorCoreDeps {
  readonly store: SessionStore;
  readonly publisher: CoordinatorPublisher;
  readonly log: Logger;
  readonly defaults: RuntimeDefaults;
  readonly crash?: CrashHook;
  readonly now?: () => number;
  readonly newSessionId?: () => string;
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
  timers_fired: number;
}

/** How many times one inbox message is re-stepped after losing compare-and-set races. */
const MAX_CAS_ATTEMPTS = 25;

/**
 * The coordinator's logic, independent of how messages arrive: submit, step one inbox input,
 * fire due timers. It keeps no per-session state between calls.
 */
export function createCoordinatorCore(deps: CoordinatorCoreDeps) {
  const { store, publisher, defaults } = deps;
  const now = deps.now ?? Date.now;
  const crash = deps.crash ?? (() => {});
  const newSessionId = deps.newSessionId ?? (() => randomUUID().replaceAll("-", ""));
  const stats: CoordinatorStats = { submitted: 0, rejected: 0, applied: 0, dropped: 0, forged: 0, duplicates: 0, conflicts: 0, republished: 0, timers_fired: 0 };

  const reject = (code: "invalid_query" | "invalid_message" | "unsupported_version", message: string): SubmitReply => {
    stats.rejected++;
    deps.log.info({ code, msg: message }, "submit rejected");
    return { v: SCHEMA_VERSION, ok: false, error: new AgentmeshError(code, message, { component: "coordinator" }).toWire() };
  };

  /** Validates a query, creates the session once per idempotency key, and kicks it off. */
  async function submit(body: unknown): Promise<SubmitReply> {
    const v = (body as { v?: unknown } | null)?.v;
    if (body !== null && typeof body === "object" && v !== undefined && v !== SCHEMA_VERSION) {
      return reject("unsupported_version", `schema version ${JSON.stringify(v)} is not supported (expected ${SCHEMA_VERSION})`);
    }
    const parsed = SubmitRequest.safeParse(body);
    if (!parsed.success) return reject("invalid_message", `bad submit request: ${formatZodError(parsed.error)}`);
    const query = checkQuery(parsed.data.query);
    if (!query.ok) return reject("invalid_query", query.reason);
    const req = parsed.data;
    const proposed = req.session_id ?? newSessionId();
    const sessionId = await store.claimIdempotencyKey(req.idempotency_key ?? proposed, proposed);
    const state = createSession({ sessionId, workflow: req.workflow, query: query.query, options: req.options, now: now(), defaults });
    const created = await store.create(state);
    await publisher.publishInbox({
      v: SCHEMA_VERSION, kind: "start", session_id: sessionId, input_id: inputIds.start(sessionId),
      workflow: req.workflow, query: query.query, options: req.options,
    });
    stats.submitted++;
    deps.log.info({ session_id: sessionId, created, workflow: req.workflow }, "session submitted");
    return { v: SCHEMA_VERSION, ok: true, session_id: sessionId, created };
  }

  /**
   * A timer whose input is dropped will never be cleared by a commit: remove it so it stops
   * firing. A session timer is removed only when its session is gone or finished: a stale one
   * (the session paused, then resumed with a re-armed deadline) shares the member of the live one.
   */
  async function retireTimer(input: InboxInput, why: "unknown_session" | string): Promise<void> {
    if (input.kind !== "timer") return;
    if (input.task_id) await store.removeTimers([timerMember.task(input.task_id)]);
    else if (why === "unknown_session" || why === "terminal") await store.removeTimers([timerMember.session(input.session_id)]);
  }

  async function flush(sessionId: string, outbox: Outbox): Promise<void> {
    await publisher.publishOutbox(outbox.entries);
    crash("after-publish");
    await store.clearOutbox(sessionId, outbox.version);
  }

  /**
   * Steps a session with one inbox input: load, (re)publish any pending outbox, skip what was
   * applied, step, commit in one CAS, publish, clear. Returns "retry" only when CAS kept losing.
   */
  async function handleInput(input: InboxInput): Promise<"ack" | "retry"> {
    const sid = input.session_id;
    const log = deps.log.child({ session_id: sid, input_id: input.input_id });
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const loaded = await store.load(sid);
      crash("after-load");
      if (!loaded) {
        stats.dropped++;
        log.warn({ kind: input.kind }, "dropped: unknown session");
        await retireTimer(input, "unknown_session");
        return "ack";
      }
      if (loaded.outbox) {
        // A crash between CAS and publish left this unpublished; publishing again is safe (de-dup ids).
        stats.republished++;
        await flush(sid, loaded.outbox);
      }
      if (await store.isApplied(sid, input.input_id)) {
        stats.duplicates++;
        log.debug("already applied");
        return "ack";
      }
      const at = now();
      const out = step(loaded.state, input, { now: at, defaults });
      if (out.kind === "drop") {
        stats.dropped++;
        if (out.reason === "wrong_sender") {
          stats.forged++;
          log.warn({ reason: out.reason, detail: out.detail }, "dropped a result from the wrong sender");
        } else log.info({ reason: out.reason, detail: out.detail }, "dropped input");
        await retireTimer(input, out.reason);
        return "ack";
      }
      const version = out.state.meta.version;
      const outbox: Outbox = { version, entries: [...out.outbox] };
      const res = await store.commit({
        sessionId: sid,
        expectedVersion: loaded.state.meta.version,
        state: out.state,
        inputId: input.input_id,
        outbox,
        log: { version, input_id: input.input_id, input, now: at, commands: [...out.commands], status: out.state.meta.status },
        terminal: isTerminal(out.state.meta.status),
        timers: out.timers,
        clearTimers: out.clearTimers,
      });
      if (!res.ok) {
        if (res.reason === "missing") return "ack";
        if (res.reason === "conflict") stats.conflicts++;
        continue; // conflict: another coordinator moved the session; already_applied: next pass acks
      }
      crash("after-cas");
      stats.applied++;
      log.debug({ version, status: out.state.meta.status, commands: out.commands }, "applied");
      await flush(sid, outbox);
      return "ack";
    }
    log.warn("gave up after repeated CAS conflicts; will be redelivered");
    return "retry";
  }

  /** Claims due deadlines and turns each into a timer inbox message (fires once across coordinators). */
  async function fireDueTimers(limit = 100): Promise<number> {
    const members = await store.claimDueTimers(now(), limit);
    for (const member of members) {
      const t = parseTimerMember(member);
      if (!t) {
        deps.log.warn({ member }, "unreadable timer member");
        continue;
      }
      const input: InboxInput =
        t.kind === "task"
          ? { v: SCHEMA_VERSION, kind: "timer", session_id: t.sessionId, input_id: inputIds.timer(t.taskId), task_id: t.taskId, reason: "task_deadline" }
          : { v: SCHEMA_VERSION, kind: "timer", session_id: t.sessionId, input_id: inputIds.timer(`session.${t.sessionId}`), task_id: null, reason: "session_deadline" };
      await publisher.publishInbox(input);
      stats.timers_fired++;
    }
    return members.length;
  }

  return { submit, handleInput, fireDueTimers, stats };
}

export type CoordinatorCore = ReturnType<typeof createCoordinatorCore>;
