import { BLACKBOARD_LIMITS, LIMITS, SessionId, ThreadId } from "@agentmesh/contracts";
import type { SessionStoreOptions, CommitRequest } from "./types.js";

/** The names `ttls()` reports, one per key a session can have. */
export const SESSION_KEY_NAMES = ["state", "applied", "log"] as const;
export type SessionKeyName = (typeof SESSION_KEY_NAMES)[number];

/** The Redis keys of one prefix. Both adapters use the same names so `ttls()` and docs agree. */
export interface KeyLayout {
  /** `<kp>:s:{<sid>}:<name>`; the hash tag keeps one session's keys in one cluster slot. */
  session(sessionId: string, name: SessionKeyName): string;
  /** `<kp>:idem:<key>`: the owner session of a client idempotency key. */
  idempotency(key: string): string;
  /**
   * `<kp>:timers`: one sorted set of due deadlines for all sessions. It hashes to its own slot,
   * so on Redis Cluster the commit script would touch two slots; a cluster deployment needs
   * per-slot timer sets (e.g. `<kp>:timers:{<sid>}` sharded by slot) and a poller per shard.
   */
  readonly timers: string;
  /**
   * `<kp>:thread:{<tid>}` (hash: owner, created_at, updated_at), `<kp>:thread:{<tid>}:sessions`
   * (list of session ids, oldest first) and `<kp>:thread:{<tid>}:refs` (list of the thread's
   * long-term references, oldest first); one hash tag, so all three are in one cluster slot.
   */
  thread(threadId: string): { readonly record: string; readonly sessions: string; readonly refs: string };
  /** SCAN pattern matching every session's state key. */
  readonly stateGlob: string;
  /**
   * Glob patterns that together match every key of this layout, one per kind of key. The Redis
   * ACL users (`acl.ts`) are derived from them: a new kind of key needs its pattern here.
   */
  readonly globs: {
    readonly sessions: string;
    readonly idempotency: string;
    readonly timers: string;
    readonly threads: string;
  };
  /** Extracts the session id from a state key (null when it does not match). */
  sessionOfStateKey(key: string): string | null;
}

/** Escapes Redis glob metacharacters so a prefix matches only itself in SCAN MATCH. */
const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** Builds the key layout for a prefix. */
export function keyLayout(keyPrefix: string): KeyLayout {
  if (keyPrefix.length === 0 || /[{}\s]/.test(keyPrefix)) {
    // Braces in the prefix would move the hash tag away from the session id.
    throw new Error(
      `invalid session-store key prefix ${JSON.stringify(keyPrefix)}: must be non-empty, without braces or spaces`,
    );
  }
  const head = `${keyPrefix}:s:{`;
  return {
    session: (sid, name) => `${head}${checkSessionId(sid)}}:${name}`,
    idempotency: (key) => `${keyPrefix}:idem:${key}`,
    timers: `${keyPrefix}:timers`,
    thread: (tid) => {
      const record = `${keyPrefix}:thread:{${checkThreadId(tid)}}`;
      return { record, sessions: `${record}:sessions`, refs: `${record}:refs` };
    },
    stateGlob: `${globEscape(head)}*}:state`,
    globs: {
      sessions: `${globEscape(head)}*`,
      idempotency: `${globEscape(`${keyPrefix}:idem:`)}*`,
      timers: globEscape(`${keyPrefix}:timers`),
      threads: `${globEscape(`${keyPrefix}:thread:`)}*`,
    },
    sessionOfStateKey(key) {
      if (!key.startsWith(head) || !key.endsWith("}:state")) return null;
      const sid = key.slice(head.length, -"}:state".length);
      return SessionId.safeParse(sid).success ? sid : null;
    },
  };
}

/** Rejects a malformed session id: it becomes a hash tag, so `}` or an empty id would break slotting. */
export function checkSessionId(sessionId: string): string {
  if (!SessionId.safeParse(sessionId).success) throw new Error(`invalid session id ${JSON.stringify(sessionId)}`);
  return sessionId;
}

/** Rejects a malformed thread id, for the same reason as a session id. */
export function checkThreadId(threadId: string): string {
  if (!ThreadId.safeParse(threadId).success) throw new Error(`invalid thread id ${JSON.stringify(threadId)}`);
  return threadId;
}

/** A thread lives as long as a session could: the longer of the two session TTLs, restarted by every session added. */
export const threadTtlMs = (o: Pick<SessionStoreOptions, "activeTtlMs" | "finishedTtlMs">) =>
  Math.max(o.activeTtlMs, o.finishedTtlMs);

/** Options with defaults applied and numbers checked once, at construction. */
export type ResolvedOptions = Required<SessionStoreOptions>;

/** Validates options; a bad TTL would silently make keys immortal or vanish at once. */
export function resolveOptions(opts: SessionStoreOptions): ResolvedOptions {
  const r: ResolvedOptions = {
    transitionLogCap: LIMITS.transitionLogCap,
    transitionLogMaxBytes: LIMITS.transitionLogMaxBytes,
    timerLeaseMs: 30_000,
    longTermRefsMax: BLACKBOARD_LIMITS.maxLongTermRefs,
    longTermRefsTtlMs: LIMITS.longTermRefsTtlMs,
    ...opts,
  };
  for (const k of [
    "activeTtlMs",
    "finishedTtlMs",
    "idempotencyTtlMs",
    "transitionLogCap",
    "transitionLogMaxBytes",
    "timerLeaseMs",
    "longTermRefsMax",
    "longTermRefsTtlMs",
  ] as const) {
    if (!Number.isSafeInteger(r[k]) || r[k] <= 0)
      throw new Error(`session-store option ${k} must be a positive integer, got ${String(r[k])}`);
  }
  // The log always keeps its first line and the latest one.
  if (r.transitionLogCap < 2)
    throw new Error(`session-store option transitionLogCap must be at least 2, got ${r.transitionLogCap}`);
  // A session's memory holds at most this many: more could be kept but never handed on.
  if (r.longTermRefsMax > BLACKBOARD_LIMITS.maxLongTermRefs)
    throw new Error(
      `session-store option longTermRefsMax must be at most ${BLACKBOARD_LIMITS.maxLongTermRefs}, got ${r.longTermRefsMax}`,
    );
  keyLayout(r.keyPrefix);
  return r;
}

/**
 * Checks a commit for caller bugs before anything is sent: these are faults in the coordinator,
 * not conflicts, so they throw instead of returning a result.
 */
export function checkCommit(req: CommitRequest): void {
  checkSessionId(req.sessionId);
  if (!Number.isSafeInteger(req.expectedVersion) || req.expectedVersion < 0) {
    throw new Error(
      `commit ${req.sessionId}: expectedVersion must be a non-negative integer, got ${req.expectedVersion}`,
    );
  }
  const next = req.expectedVersion + 1;
  if (req.state.meta.session_id !== req.sessionId) {
    throw new Error(`commit ${req.sessionId}: state belongs to session ${req.state.meta.session_id}`);
  }
  if (req.state.meta.version !== next) {
    throw new Error(`commit ${req.sessionId}: state.meta.version must be ${next}, got ${req.state.meta.version}`);
  }
  if (req.outbox.version !== next) {
    throw new Error(`commit ${req.sessionId}: outbox.version must be ${next}, got ${req.outbox.version}`);
  }
  if (req.inputId.length === 0) throw new Error(`commit ${req.sessionId}: empty inputId`);
  for (const t of req.timers ?? []) {
    if (!Number.isSafeInteger(t.dueAt) || t.dueAt < 0)
      throw new Error(`commit ${req.sessionId}: timer ${t.member} has a bad dueAt ${t.dueAt}`);
  }
}
