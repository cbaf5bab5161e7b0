import type { Outbox, SessionState, Thread, TransitionLogLine } from "@agentmesh/contracts";

/** A commit of one transition: state, applied marker, outbox and log line, all or nothing. */
export interface CommitRequest {
  readonly sessionId: string;
  /** The version currently stored; the commit fails with `conflict` if another writer moved it. */
  readonly expectedVersion: number;
  /** The new state; `state.meta.version` must be `expectedVersion + 1`. */
  readonly state: SessionState;
  /** Marks this inbox input as applied; a second commit with the same id fails `already_applied`. */
  readonly inputId: string;
  readonly outbox: Outbox;
  readonly log: TransitionLogLine;
  /** When true every key of the session gets the finished-session TTL. */
  readonly terminal: boolean;
  /** Deadlines to add or move in the timer set (member -> due epoch ms). */
  readonly timers?: ReadonlyArray<{ readonly member: string; readonly dueAt: number }>;
  /** Timer members to remove. */
  readonly clearTimers?: readonly string[];
}

export type CommitResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "conflict"; readonly currentVersion: number }
  | { readonly ok: false; readonly reason: "already_applied" }
  | { readonly ok: false; readonly reason: "missing" };

export type AttachResult =
  { readonly ok: true; readonly thread: Thread } | { readonly ok: false; readonly reason: "owned_by_other" };

export interface LoadedSession {
  readonly state: SessionState;
  /** The outbox of the last transition if it was not yet cleared (published). */
  readonly outbox: Outbox | null;
}

/** A session loaded for one inbox input: whether that input was already applied. */
export interface LoadedForInput extends LoadedSession {
  readonly applied: boolean;
}

/** The session store port: the system of record for sessions. The coordinator is its only writer. */
export interface SessionStore {
  /** SET NX of an idempotency key; returns the session id that owns the key (ours or an earlier one). */
  claimIdempotencyKey(key: string, sessionId: string): Promise<string>;
  /** The session a live idempotency key names, or null; claims nothing. */
  peekIdempotencyKey(key: string): Promise<string | null>;
  /**
   * Creates the session at its initial version if absent; false when it already existed.
   * `idempotencyKey`, the key claimed for it, then lives exactly as long as the session's keys
   * (the finished-session TTL once it ends), so a retry never finds a key whose session is gone.
   */
  create(state: SessionState, idempotencyKey?: string): Promise<boolean>;
  load(sessionId: string): Promise<LoadedSession | null>;
  /**
   * `load` and `isApplied` in one read (one round trip to Redis, atomic): what a coordinator needs
   * to step a session with one inbox input.
   */
  loadForInput(sessionId: string, inputId: string): Promise<LoadedForInput | null>;
  isApplied(sessionId: string, inputId: string): Promise<boolean>;
  /** The compare-and-set of one transition. */
  commit(req: CommitRequest): Promise<CommitResult>;
  /**
   * Waits until enough replicas hold every write this store's connection made so far: call it
   * right after `commit` (or after a `loadForInput` that returned an outbox) and before acting on
   * what was written. Resolves at once without replicas configured; rejects with a retryable
   * `unavailable` error when fewer replicas confirm within the timeout, or when the connection
   * changed meanwhile (a failover: the write may be lost). See docs/redis-failover.md.
   */
  awaitReplicas(): Promise<void>;
  /** Clears the outbox if it is still the one written at `version`. */
  clearOutbox(sessionId: string, version: number): Promise<void>;
  /** The transition log, oldest first: the first line and the latest within the caps. */
  transitionLog(sessionId: string): Promise<TransitionLogLine[]>;
  /** Session ids known to the store (for `agentmesh sessions`); bounded scan. */
  listSessions(limit: number): Promise<string[]>;
  /**
   * Claims timers due at or before `now`, atomically: each due member goes to one caller and is
   * re-armed at `now + timerLeaseMs` rather than removed. A claimer that dies before publishing
   * therefore only delays the timer; a commit's `clearTimers` (or `removeTimers`) ends it.
   */
  claimDueTimers(now: number, limit: number): Promise<string[]>;
  /** Removes timer members (e.g. for a timer input dropped because its session is gone). */
  removeTimers(members: readonly string[]): Promise<void>;
  /**
   * Adds a session to a thread, creating the thread owned by `owner` (null: no owner) when it is
   * new; adding a session it already lists changes nothing. Refused, writing nothing, when the
   * thread belongs to another owner. The thread keeps its latest `LIMITS.maxThreadSessions`
   * sessions, and lives as long as a session could (the longer session TTL) after the last add.
   */
  attachToThread(threadId: string, owner: string | null, sessionId: string, now: number): Promise<AttachResult>;
  /** A thread, or null when it does not exist (or expired). */
  loadThread(threadId: string): Promise<Thread | null>;
  /**
   * Keeps long-term references for a thread (docs/workflows/blackboard.md): each one it does not
   * hold yet is appended, in order; the latest `longTermRefsMax` stay; they expire
   * `longTermRefsTtlMs` after this write. Written only while the thread exists and is `owner`'s:
   * false, writing nothing, otherwise. A thread made anew (after it expired) starts with none.
   */
  keepThreadRefs(threadId: string, owner: string | null, refs: readonly string[]): Promise<boolean>;
  /** A thread's long-term references, oldest first; none when the thread or its references are gone. */
  loadThreadRefs(threadId: string): Promise<string[]>;
  /** Remaining TTL in ms of each key of a session (-1 = no TTL, -2 = absent). For tests and inspect. */
  ttls(sessionId: string): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface SessionStoreOptions {
  /** Key prefix; every key is `<keyPrefix>:...`. */
  readonly keyPrefix: string;
  /** Sliding TTL of a live session's keys (ms). */
  readonly activeTtlMs: number;
  /** TTL of a finished session's keys (ms). */
  readonly finishedTtlMs: number;
  /** Idempotency-key TTL (ms). */
  readonly idempotencyTtlMs: number;
  /**
   * Transition-log lines kept per session (default `LIMITS.transitionLogCap`). Added so tests can
   * exercise the cap with a handful of commits; production leaves it unset.
   */
  readonly transitionLogCap?: number;
  /** Transition-log bytes kept per session (default `LIMITS.transitionLogMaxBytes`); for tests, like the line cap. */
  readonly transitionLogMaxBytes?: number;
  /** How long a claimed timer waits before it comes due again unless cleared (default 30 s). */
  readonly timerLeaseMs?: number;
  /** Long-term references a thread keeps, the latest (default and most 20). */
  readonly longTermRefsMax?: number;
  /** How long a thread's long-term references live after their last write (default `LIMITS.longTermRefsTtlMs`). */
  readonly longTermRefsTtlMs?: number;
}
