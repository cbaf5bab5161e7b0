import { LIMITS, STATE_SCHEMA_VERSION, type Thread } from "@agentmesh/contracts";
import { decodeLoaded, decodeLog, encodeCommit, encodeState, utf8Bytes } from "./codec.js";
import {
  checkCommit,
  checkSessionId,
  checkThreadId,
  resolveOptions,
  SESSION_KEY_NAMES,
  threadTtlMs,
  type SessionKeyName,
} from "./keys.js";
import type { SessionStore, SessionStoreOptions, CommitResult } from "./types.js";

/** Options of the in-memory twin; `now` drives TTLs so tests can move time. */
export interface InMemorySessionStoreOptions extends SessionStoreOptions {
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

/**
 * Creates the in-in-memory session store: the same semantics as the Redis adapter (it passes the same
 * conformance suite), for unit tests and single-process local runs. Every method does all its
 * work before its first await, so each call is atomic with respect to the others, as a Lua
 * script is. Values are stored as JSON strings so callers can never mutate stored state.
 */
export function createInMemorySessionStore(opts: InMemorySessionStoreOptions): SessionStore {
  const o = resolveOptions(opts);
  const now = opts.now ?? Date.now;
  const sessions = new Map<string, SessionKeys>();
  const idem = new Map<string, Entry<string>>();
  const timers = new Map<string, number>();
  const threads = new Map<string, Entry<Thread>>();

  const live = <V>(e: Entry<V> | undefined): e is Entry<V> =>
    e !== undefined && (e.expiresAt === null || now() < e.expiresAt);

  /** The live keys of a session, dropping expired ones (Redis's lazy expiry). */
  function keysOf(sid: string): SessionKeys {
    checkSessionId(sid);
    const s = sessions.get(sid);
    if (!s) return {};
    for (const name of SESSION_KEY_NAMES) if (s[name] !== undefined && !live(s[name] as Entry<unknown>)) delete s[name];
    if (!s.state && !s.applied && !s.log) sessions.delete(sid);
    return s;
  }

  return {
    async claimIdempotencyKey(key, sessionId) {
      checkSessionId(sessionId);
      if (key.length === 0) throw new Error("empty idempotency key");
      const cur = idem.get(key);
      if (live(cur)) return cur.value;
      idem.set(key, { value: sessionId, expiresAt: now() + o.idempotencyTtlMs });
      return sessionId;
    },

    async peekIdempotencyKey(key) {
      if (key.length === 0) throw new Error("empty idempotency key");
      const cur = idem.get(key);
      return live(cur) ? cur.value : null;
    },

    async create(state, idempotencyKey) {
      const sid = state.meta.session_id;
      const json = encodeState(state);
      if (keysOf(sid).state) return false;
      const expiresAt = now() + o.activeTtlMs;
      const owned = idempotencyKey !== undefined && followIdem(idempotencyKey, sid, expiresAt);
      const hash: StateHash = {
        version: String(state.meta.version),
        state: json,
        outbox: null,
        outboxVersion: null,
        schema: String(STATE_SCHEMA_VERSION),
        idem: owned ? idempotencyKey : null,
        logBytes: 0,
      };
      sessions.set(sid, { state: { value: hash, expiresAt } });
      return true;
    },

    async load(sessionId) {
      const h = keysOf(sessionId).state?.value;
      return h ? decodeLoaded(sessionId, h) : null;
    },

    async loadForInput(sessionId, inputId) {
      const s = keysOf(sessionId);
      const h = s.state?.value;
      return h ? { ...decodeLoaded(sessionId, h), applied: s.applied?.value.has(inputId) ?? false } : null;
    },

    async isApplied(sessionId, inputId) {
      return keysOf(sessionId).applied?.value.has(inputId) ?? false;
    },

    async commit(req): Promise<CommitResult> {
      checkCommit(req);
      const enc = encodeCommit(req.state, req.outbox, req.log);
      const s = keysOf(req.sessionId);
      if (!s.state) return { ok: false, reason: "missing" };
      if (s.applied?.value.has(req.inputId)) return { ok: false, reason: "already_applied" };
      if (s.state.value.version !== String(req.expectedVersion)) {
        return { ok: false, reason: "conflict", currentVersion: Number(s.state.value.version) };
      }
      const expiresAt = now() + (req.terminal ? o.finishedTtlMs : o.activeTtlMs);
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
      if (prev.idem !== null) followIdem(prev.idem, req.sessionId, expiresAt);
      for (const m of req.clearTimers ?? []) timers.delete(m);
      for (const t of req.timers ?? []) timers.set(t.member, t.dueAt);
      return { ok: true };
    },

    async awaitReplicas() {
      // one copy, no replicas: a commit is as durable here as it will ever be
    },

    async clearOutbox(sessionId, version) {
      const h = keysOf(sessionId).state?.value;
      if (h && h.outboxVersion === String(version)) {
        h.outbox = null;
        h.outboxVersion = null;
      }
    },

    async transitionLog(sessionId) {
      return decodeLog(sessionId, keysOf(sessionId).log?.value ?? []);
    },

    async listSessions(limit) {
      const out: string[] = [];
      for (const sid of [...sessions.keys()]) {
        if (out.length >= limit) break;
        if (keysOf(sid).state) out.push(sid);
      }
      return out;
    },

    async claimDueTimers(at, limit) {
      if (limit <= 0) return [];
      // Same order as ZRANGEBYSCORE: score, then member bytes.
      const due = [...timers.entries()]
        .filter(([, score]) => score <= at)
        .sort(([am, as], [bm, bs]) => as - bs || (am < bm ? -1 : am > bm ? 1 : 0))
        .slice(0, Math.floor(limit))
        .map(([m]) => m);
      for (const m of due) timers.set(m, at + o.timerLeaseMs);
      return due;
    },

    async removeTimers(members) {
      for (const m of members) timers.delete(m);
    },

    async attachToThread(threadId, owner, sessionId, at) {
      checkSessionId(sessionId);
      checkThreadId(threadId);
      const cur = threads.get(threadId);
      const t: Thread = live(cur)
        ? structuredClone(cur.value)
        : { thread_id: threadId, owner, created_at: at, updated_at: at, sessions: [] };
      if (t.owner !== owner) return { ok: false, reason: "owned_by_other" } as const;
      if (!t.sessions.includes(sessionId)) {
        t.sessions = [...t.sessions, sessionId].slice(-LIMITS.maxThreadSessions);
        t.updated_at = at;
      }
      threads.set(threadId, { value: t, expiresAt: now() + threadTtlMs(o) });
      return { ok: true, thread: structuredClone(t) } as const;
    },

    async loadThread(threadId) {
      checkThreadId(threadId);
      const cur = threads.get(threadId);
      return live(cur) ? structuredClone(cur.value) : null;
    },

    async ttls(sessionId) {
      const s = keysOf(sessionId);
      const out: Record<string, number> = {};
      for (const name of SESSION_KEY_NAMES) out[name] = pttl(s[name as SessionKeyName]);
      return out;
    },

    async close() {},
  };

  /** Gives a live idempotency key that names `sid` the session's expiry; false when it names another session or none. */
  function followIdem(key: string, sid: string, expiresAt: number): boolean {
    const e = idem.get(key);
    if (!live(e) || e.value !== sid) return false;
    e.expiresAt = expiresAt;
    return true;
  }

  /** PTTL semantics: -2 absent, -1 no expiry, else remaining ms. */
  function pttl(e: Entry<unknown> | undefined): number {
    if (!live(e)) return -2;
    return e.expiresAt === null ? -1 : e.expiresAt - now();
  }
}
