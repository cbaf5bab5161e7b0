import { LIMITS, STATE_SCHEMA_VERSION, type SessionState, type Thread } from "@agentmesh/contracts";
import { decodeLoaded, decodeLog, encodeCommit, encodeState, utf8Bytes } from "./codec.js";
import {
  checkCommit,
  checkSessionId,
  checkThreadId,
  resolveOptions,
  SESSION_KEY_NAMES,
  threadTtlMs,
  type ResolvedOptions,
  type SessionKeyName,
} from "./keys.js";
import type { AttachResult, CommitRequest, CommitResult, SessionStore, SessionStoreOptions } from "./types.js";

/** Options of the local twin (state kept in the process); `now` drives TTLs so tests can move time. */
export interface LocalSessionStoreOptions extends SessionStoreOptions {
  /** Clock for TTLs (epoch ms). Default `Date.now`. */
  readonly now?: () => number;
}

/** One key with its expiry, like a Redis key: absent once `now() >= expiresAt`. */
interface Entry<V> {
  value: V;
  expiresAt: number | null;
}

/** The state hash's fields, stored as strings exactly as in Redis so decoding is shared. */
interface StateHash {
  version: string;
  state: string;
  outbox: string | null;
  outboxVersion: string | null;
  /** STATE_SCHEMA_VERSION of the writer; null as in a hash written before the field existed. */
  schema: string | null;
  /** The idempotency key claimed for this session, whose TTL follows the session's. */
  idem: string | null;
  /** Running UTF-8 size of the log list. */
  logBytes: number;
}

/** A session's keys; each expires on its own, as the three Redis keys do. */
interface SessionKeys {
  state?: Entry<StateHash>;
  applied?: Entry<Set<string>>;
  log?: Entry<string[]>;
}

/** The twin's keys and clock, shared by its methods. */
interface LocalState {
  readonly o: ResolvedOptions;
  readonly now: () => number;
  readonly sessions: Map<string, SessionKeys>;
  readonly idem: Map<string, Entry<string>>;
  /** timer member → due time (the timers sorted set) */
  readonly timers: Map<string, number>;
  readonly threads: Map<string, Entry<Thread>>;
  /** thread id → its long-term references, oldest first */
  readonly threadRefs: Map<string, Entry<string[]>>;
}

/**
 * Creates the local session store twin, which keeps its state in the process: the same semantics as the Redis adapter (it passes the same
 * conformance suite), for unit tests and single-process local runs. Every method does all its
 * work before its first await, so each call is atomic with respect to the others, as a Lua
 * script is. Values are stored as JSON strings so callers can never mutate stored state.
 */
export function createLocalSessionStore(opts: LocalSessionStoreOptions): SessionStore {
  const st: LocalState = {
    o: resolveOptions(opts),
    now: opts.now ?? Date.now,
    sessions: new Map(),
    idem: new Map(),
    timers: new Map(),
    threads: new Map(),
    threadRefs: new Map(),
  };
  const { o, now, idem, timers, threads } = st;

  return {
    async claimIdempotencyKey(key, sessionId) {
      checkSessionId(sessionId);
      if (key.length === 0) throw new Error("empty idempotency key");
      const cur = idem.get(key);
      if (live(st, cur)) return cur.value;
      idem.set(key, { value: sessionId, expiresAt: now() + o.idempotencyTtlMs });
      return sessionId;
    },

    async peekIdempotencyKey(key) {
      if (key.length === 0) throw new Error("empty idempotency key");
      const cur = idem.get(key);
      return live(st, cur) ? cur.value : null;
    },

    create: async (state, idempotencyKey) => create(st, state, idempotencyKey),

    async load(sessionId) {
      const h = keysOf(st, sessionId).state?.value;
      return h ? decodeLoaded(sessionId, h) : null;
    },

    async loadForInput(sessionId, inputId) {
      const s = keysOf(st, sessionId);
      const h = s.state?.value;
      return h ? { ...decodeLoaded(sessionId, h), applied: s.applied?.value.has(inputId) ?? false } : null;
    },

    async isApplied(sessionId, inputId) {
      return keysOf(st, sessionId).applied?.value.has(inputId) ?? false;
    },

    commit: async (req) => commit(st, req),

    async awaitReplicas() {
      // one copy, no replicas: a commit is as durable here as it will ever be
    },

    async clearOutbox(sessionId, version) {
      const h = keysOf(st, sessionId).state?.value;
      if (h && h.outboxVersion === String(version)) {
        h.outbox = null;
        h.outboxVersion = null;
      }
    },

    async transitionLog(sessionId) {
      return decodeLog(sessionId, keysOf(st, sessionId).log?.value ?? []);
    },

    async listSessions(limit) {
      const out: string[] = [];
      for (const sid of [...st.sessions.keys()]) {
        if (out.length >= limit) break;
        if (keysOf(st, sid).state) out.push(sid);
      }
      return out;
    },

    claimDueTimers: async (at, limit) => claimDueTimers(st, at, limit),

    async removeTimers(members) {
      for (const m of members) timers.delete(m);
    },

    attachToThread: async (threadId, owner, sessionId, at) => attachToThread(st, threadId, owner, sessionId, at),

    async loadThread(threadId) {
      checkThreadId(threadId);
      const cur = threads.get(threadId);
      return live(st, cur) ? structuredClone(cur.value) : null;
    },

    keepThreadRefs: async (threadId, owner, refs) => keepThreadRefs(st, threadId, owner, refs),

    loadThreadRefs: async (threadId) => loadThreadRefs(st, threadId),

    async ttls(sessionId) {
      const s = keysOf(st, sessionId);
      const out: Record<string, number> = {};
      for (const name of SESSION_KEY_NAMES) out[name] = pttl(st, s[name as SessionKeyName]);
      return out;
    },

    async close() {},
  };
}

/** True while the key exists: it has no expiry or has not reached it. */
function live<V>(st: LocalState, e: Entry<V> | undefined): e is Entry<V> {
  return e !== undefined && (e.expiresAt === null || st.now() < e.expiresAt);
}

/** The live keys of a session, dropping expired ones (Redis's lazy expiry). */
function keysOf(st: LocalState, sid: string): SessionKeys {
  checkSessionId(sid);
  const s = st.sessions.get(sid);
  if (!s) return {};
  for (const name of SESSION_KEY_NAMES)
    if (s[name] !== undefined && !live(st, s[name] as Entry<unknown>)) delete s[name];
  if (!s.state && !s.applied && !s.log) st.sessions.delete(sid);
  return s;
}

/** Gives a live idempotency key that names `sid` the session's expiry; false when it names another session or none. */
function followIdem(st: LocalState, key: string, sid: string, expiresAt: number): boolean {
  const e = st.idem.get(key);
  if (!live(st, e) || e.value !== sid) return false;
  e.expiresAt = expiresAt;
  return true;
}

/** PTTL semantics: -2 absent, -1 no expiry, else remaining ms. */
function pttl(st: LocalState, e: Entry<unknown> | undefined): number {
  if (!live(st, e)) return -2;
  return e.expiresAt === null ? -1 : e.expiresAt - st.now();
}

/** `create`, as CREATE_LUA: the state hash of a new session, owning the idempotency key when it names the session. */
function create(st: LocalState, state: SessionState, idempotencyKey: string | undefined): boolean {
  const sid = state.meta.session_id;
  const json = encodeState(state);
  if (keysOf(st, sid).state) return false;
  const expiresAt = st.now() + st.o.activeTtlMs;
  const owned = idempotencyKey !== undefined && followIdem(st, idempotencyKey, sid, expiresAt);
  const hash: StateHash = {
    version: String(state.meta.version),
    state: json,
    outbox: null,
    outboxVersion: null,
    schema: String(STATE_SCHEMA_VERSION),
    idem: owned ? idempotencyKey : null,
    logBytes: 0,
  };
  st.sessions.set(sid, { state: { value: hash, expiresAt } });
  return true;
}

/** `commit`, as COMMIT_LUA: the compare-and-set of the state, the applied marker, the log and the timers. */
function commit(st: LocalState, req: CommitRequest): CommitResult {
  const { o } = st;
  checkCommit(req);
  const enc = encodeCommit(req.state, req.outbox, req.log);
  const s = keysOf(st, req.sessionId);
  if (!s.state) return { ok: false, reason: "missing" };
  if (s.applied?.value.has(req.inputId)) return { ok: false, reason: "already_applied" };
  if (s.state.value.version !== String(req.expectedVersion)) {
    return { ok: false, reason: "conflict", currentVersion: Number(s.state.value.version) };
  }
  const expiresAt = st.now() + (req.terminal ? o.finishedTtlMs : o.activeTtlMs);
  const prev = s.state.value;
  const log = [...(s.log?.value ?? []), enc.log];
  let logBytes = prev.logBytes + utf8Bytes(enc.log);
  // Keep the first line (the start) and the latest that fit both caps, as COMMIT_LUA does.
  while (log.length > 2 && (log.length > o.transitionLogCap || logBytes > o.transitionLogMaxBytes)) {
    logBytes -= utf8Bytes(log.splice(1, 1)[0] ?? "");
  }
  s.state = {
    value: {
      version: String(req.expectedVersion + 1),
      state: enc.state,
      outbox: enc.outbox,
      outboxVersion: String(req.outbox.version),
      schema: String(STATE_SCHEMA_VERSION),
      idem: prev.idem,
      logBytes,
    },
    expiresAt,
  };
  const applied = s.applied?.value ?? new Set<string>();
  applied.add(req.inputId);
  s.applied = { value: applied, expiresAt };
  s.log = { value: log, expiresAt };
  if (prev.idem !== null) followIdem(st, prev.idem, req.sessionId, expiresAt);
  for (const m of req.clearTimers ?? []) st.timers.delete(m);
  for (const t of req.timers ?? []) st.timers.set(t.member, t.dueAt);
  return { ok: true };
}

/** `claimDueTimers`, as CLAIM_TIMERS_LUA: the due members, each leased until `at + timerLeaseMs`. */
function claimDueTimers(st: LocalState, at: number, limit: number): string[] {
  if (limit <= 0) return [];
  // Same order as ZRANGEBYSCORE: score, then member bytes.
  const due = [...st.timers.entries()]
    .filter(([, score]) => score <= at)
    .sort(([am, as], [bm, bs]) => as - bs || (am < bm ? -1 : am > bm ? 1 : 0))
    .slice(0, Math.floor(limit))
    .map(([m]) => m);
  for (const m of due) st.timers.set(m, at + st.o.timerLeaseMs);
  return due;
}

/** `keepThreadRefs`, as KEEP_THREAD_REFS_LUA: the new references appended, the latest kept, the TTL restarted. */
function keepThreadRefs(st: LocalState, threadId: string, owner: string | null, refs: readonly string[]): boolean {
  checkThreadId(threadId);
  const thread = st.threads.get(threadId);
  if (!live(st, thread) || thread.value.owner !== owner) return false;
  const cur = st.threadRefs.get(threadId);
  const kept = live(st, cur) ? [...cur.value] : [];
  for (const r of refs) if (!kept.includes(r)) kept.push(r);
  st.threadRefs.set(threadId, {
    value: kept.slice(-st.o.longTermRefsMax),
    expiresAt: st.now() + st.o.longTermRefsTtlMs,
  });
  return true;
}

/** `loadThreadRefs`: the references, while the thread lives. */
function loadThreadRefs(st: LocalState, threadId: string): string[] {
  checkThreadId(threadId);
  const refs = st.threadRefs.get(threadId);
  return live(st, st.threads.get(threadId)) && live(st, refs) ? [...refs.value] : [];
}

/** `attachToThread`, as ATTACH_THREAD_LUA: the session added to its owner's thread (made if absent). */
function attachToThread(
  st: LocalState,
  threadId: string,
  owner: string | null,
  sessionId: string,
  at: number,
): AttachResult {
  checkSessionId(sessionId);
  checkThreadId(threadId);
  const cur = st.threads.get(threadId);
  const t: Thread = live(st, cur)
    ? structuredClone(cur.value)
    : { thread_id: threadId, owner, created_at: at, updated_at: at, sessions: [] };
  if (t.owner !== owner) return { ok: false, reason: "owned_by_other" } as const;
  if (!live(st, cur)) st.threadRefs.delete(threadId); // a new thread: nothing left from an expired one
  if (!t.sessions.includes(sessionId)) {
    t.sessions = [...t.sessions, sessionId].slice(-LIMITS.maxThreadSessions);
    t.updated_at = at;
  }
  st.threads.set(threadId, { value: t, expiresAt: st.now() + threadTtlMs(st.o) });
  return { ok: true, thread: structuredClone(t) } as const;
}
