import { LIMITS, STATE_SCHEMA_VERSION, Thread } from "@agentmesh/contracts";
import type { Redis } from "ioredis";
import { createReplicaWait } from "./replicas.js";
import { decodeLoaded, decodeLog, encodeCommit, encodeState } from "./codec.js";
import {
  checkCommit,
  checkSessionId,
  checkThreadId,
  keyLayout,
  resolveOptions,
  SESSION_KEY_NAMES,
  threadTtlMs,
  type KeyLayout,
  type ResolvedOptions,
  type SessionKeyName,
} from "./keys.js";
import {
  ATTACH_THREAD_LUA,
  CLAIM_IDEMPOTENCY_LUA,
  CLAIM_TIMERS_LUA,
  CLEAR_OUTBOX_LUA,
  COMMIT_LUA,
  CREATE_LUA,
  KEEP_THREAD_REFS_LUA,
  LOAD_FOR_INPUT_LUA,
} from "./scripts.js";
import type {
  AttachResult,
  SessionStore,
  SessionStoreOptions,
  CommitRequest,
  CommitResult,
  LoadedForInput,
  LoadedSession,
} from "./types.js";

/** Options of the Redis adapter. */
export interface RedisSessionStoreOptions extends SessionStoreOptions {
  /**
   * When true, `close()` quits the connection. Default false: the caller created the client,
   * often shares it (health checks, other stores), and closes it itself.
   */
  readonly ownsConnection?: boolean;
  /**
   * Replicas that must confirm a write before it is acted on (`awaitReplicas`, Redis `WAIT`, or
   * `WAITAOF` on a server that has it); 0 (default) = no wait, for a single node.
   */
  readonly waitReplicas?: number;
  /** How long `awaitReplicas` waits for them (default 1000 ms). */
  readonly waitTimeoutMs?: number;
}

type Script = (keys: readonly string[], args: ReadonlyArray<string | number>) => Promise<unknown>;

/**
 * Registers a script with ioredis (EVALSHA, falling back to EVAL when the server's script cache
 * lost it) and returns a typed caller. Names are namespaced because a client may be shared with
 * other code that defines its own commands; redefining the same name with the same body is harmless.
 */
function defineScript(redis: Redis, name: string, numberOfKeys: number, lua: string): Script {
  const cmd = `agentmeshSessionStore${name}`;
  redis.defineCommand(cmd, { numberOfKeys, lua });
  const fn = (redis as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[cmd];
  if (typeof fn !== "function") throw new Error(`ioredis did not define ${cmd}`);
  return (keys, args) => fn.call(redis, ...keys, ...args);
}

/** The adapter's Lua scripts, each registered once per client. */
interface Scripts {
  readonly commit: Script;
  readonly loadForInput: Script;
  readonly create: Script;
  readonly clearOutbox: Script;
  readonly claimTimers: Script;
  readonly claimIdempotency: Script;
  readonly attachThread: Script;
  readonly keepThreadRefs: Script;
}

function defineScripts(redis: Redis): Scripts {
  return {
    commit: defineScript(redis, "Commit", 4, COMMIT_LUA),
    loadForInput: defineScript(redis, "LoadForInput", 2, LOAD_FOR_INPUT_LUA),
    create: defineScript(redis, "Create", 3, CREATE_LUA),
    clearOutbox: defineScript(redis, "ClearOutbox", 1, CLEAR_OUTBOX_LUA),
    claimTimers: defineScript(redis, "ClaimTimers", 1, CLAIM_TIMERS_LUA),
    claimIdempotency: defineScript(redis, "ClaimIdempotency", 1, CLAIM_IDEMPOTENCY_LUA),
    attachThread: defineScript(redis, "AttachThread", 3, ATTACH_THREAD_LUA),
    keepThreadRefs: defineScript(redis, "KeepThreadRefs", 2, KEEP_THREAD_REFS_LUA),
  };
}

/** What the store's methods share: the client, the options, the key layout and the scripts. */
interface RedisState {
  readonly redis: Redis;
  readonly o: ResolvedOptions;
  readonly keys: KeyLayout;
  readonly scripts: Scripts;
  /** A session's three keys. */
  readonly k: (sid: string) => Record<SessionKeyName, string>;
}

/** Creates the Redis session store on a connected client (see `connectRedis`). */
export function createRedisSessionStore(redis: Redis, opts: RedisSessionStoreOptions): SessionStore {
  const o = resolveOptions(opts);
  const keys = keyLayout(o.keyPrefix);
  const scripts = defineScripts(redis);
  const awaitReplicas = createReplicaWait(redis, opts.waitReplicas ?? 0, opts.waitTimeoutMs ?? 1000);
  const k = (sid: string) => ({
    state: keys.session(sid, "state"),
    applied: keys.session(sid, "applied"),
    log: keys.session(sid, "log"),
  });
  const st: RedisState = { redis, o, keys, scripts, k };

  return {
    async claimIdempotencyKey(key, sessionId) {
      checkSessionId(sessionId);
      if (key.length === 0) throw new Error("empty idempotency key");
      const owner = await scripts.claimIdempotency([keys.idempotency(key)], [sessionId, o.idempotencyTtlMs]);
      return String(owner);
    },

    async peekIdempotencyKey(key) {
      if (key.length === 0) throw new Error("empty idempotency key");
      return redis.get(keys.idempotency(key));
    },

    async create(state, idempotencyKey) {
      const sid = state.meta.session_id;
      const s = k(sid);
      const json = encodeState(state);
      const idem = idempotencyKey === undefined ? "" : keys.idempotency(idempotencyKey);
      const r = await scripts.create(
        [s.state, s.applied, s.log],
        [state.meta.version, json, o.activeTtlMs, STATE_SCHEMA_VERSION, idem, sid],
      );
      return Number(r) === 1;
    },

    load: (sessionId) => load(st, sessionId),
    loadForInput: (sessionId, inputId) => loadForInput(st, sessionId, inputId),

    async isApplied(sessionId, inputId) {
      return (await redis.sismember(k(sessionId).applied, inputId)) === 1;
    },

    commit: (req) => commit(st, req),
    awaitReplicas,

    async clearOutbox(sessionId, version) {
      await scripts.clearOutbox([k(sessionId).state], [version]);
    },

    async transitionLog(sessionId) {
      return decodeLog(sessionId, await redis.lrange(k(sessionId).log, 0, -1));
    },

    listSessions: (limit) => listSessions(st, limit),

    async claimDueTimers(now, limit) {
      if (limit <= 0) return [];
      const r = await scripts.claimTimers([keys.timers], [now, Math.floor(limit), now + o.timerLeaseMs]);
      return (r as unknown[]).map(String);
    },

    async removeTimers(members) {
      if (members.length) await redis.zrem(keys.timers, ...members);
    },

    async attachToThread(threadId, owner, sessionId, now): Promise<AttachResult> {
      checkSessionId(sessionId);
      const t = keys.thread(threadId);
      const reply = (await scripts.attachThread(
        [t.record, t.sessions, t.refs],
        [threadId, owner ?? "", sessionId, now, threadTtlMs(o), LIMITS.maxThreadSessions],
      )) as unknown[];
      if (String(reply[0]) === "owned_by_other") return { ok: false, reason: "owned_by_other" };
      const thread = await this.loadThread(threadId);
      // Only an expiry between the two calls could lose it; report what was written.
      return {
        ok: true,
        thread: thread ?? { thread_id: threadId, owner, created_at: now, updated_at: now, sessions: [sessionId] },
      };
    },

    loadThread: (threadId) => loadThread(st, threadId),

    keepThreadRefs: (threadId, owner, refs) => keepThreadRefs(st, threadId, owner, refs),
    loadThreadRefs: (threadId) => loadThreadRefs(st, threadId),
    ttls: (sessionId) => ttls(st, sessionId),

    async close() {
      if (opts.ownsConnection === true) await redis.quit();
    },
  };
}

/** `load`: the state hash's fields, decoded; null when the session has no state. */
async function load(st: RedisState, sessionId: string): Promise<LoadedSession | null> {
  const [version, state, outbox, schema] = await st.redis.hmget(
    st.k(sessionId).state,
    "version",
    "state",
    "outbox",
    "schema",
  );
  if (state === null || state === undefined) return null;
  return decodeLoaded(sessionId, {
    state,
    version: version ?? null,
    outbox: outbox ?? null,
    schema: schema ?? null,
  });
}

/** `loadForInput`: the session and whether the input was applied, read by one script. */
async function loadForInput(st: RedisState, sessionId: string, inputId: string): Promise<LoadedForInput | null> {
  const s = st.k(sessionId);
  const r = (await st.scripts.loadForInput([s.state, s.applied], [inputId])) as unknown[];
  if (String(r[0]) !== "ok") return null;
  // the script answers '' for an absent field (Lua nil would cut the reply short)
  const field = (i: number): string | null =>
    r[i] === "" || r[i] === null || r[i] === undefined ? null : String(r[i]);
  return {
    ...decodeLoaded(sessionId, { state: String(r[2]), version: field(1), outbox: field(3), schema: field(4) }),
    applied: Number(r[5]) === 1,
  };
}

/** `commit`: the transition written by the commit script, whose tagged reply says how it went. */
async function commit(st: RedisState, req: CommitRequest): Promise<CommitResult> {
  const { o } = st;
  checkCommit(req);
  const enc = encodeCommit(req.state, req.outbox, req.log);
  const s = st.k(req.sessionId);
  const timers = req.timers ?? [];
  const args: Array<string | number> = [
    req.expectedVersion,
    req.expectedVersion + 1,
    enc.state,
    req.inputId,
    enc.outbox,
    req.outbox.version,
    enc.log,
    o.transitionLogCap,
    req.terminal ? o.finishedTtlMs : o.activeTtlMs,
    o.transitionLogMaxBytes,
    STATE_SCHEMA_VERSION,
    req.sessionId,
    timers.length,
    ...timers.flatMap((t) => [t.dueAt, t.member]),
    ...(req.clearTimers ?? []),
  ];
  const reply = (await st.scripts.commit([s.state, s.applied, s.log, st.keys.timers], args)) as unknown[];
  return parseCommitReply(reply);
}

/** `listSessions`: up to `limit` ids with a state key, by SCAN. */
async function listSessions(st: RedisState, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const found = new Set<string>();
  let cursor = "0";
  // Bounded by `limit`: stop as soon as enough ids are found instead of walking the keyspace.
  do {
    const [next, batch] = await st.redis.scan(cursor, "MATCH", st.keys.stateGlob, "COUNT", 500);
    cursor = next;
    for (const key of batch) {
      const sid = st.keys.sessionOfStateKey(key);
      if (sid !== null) found.add(sid);
      if (found.size >= limit) return [...found];
    }
  } while (cursor !== "0");
  return [...found];
}

/** `loadThread`: the thread's record and session list; null when it has none. */
async function loadThread(st: RedisState, threadId: string): Promise<Thread | null> {
  const t = st.keys.thread(checkThreadId(threadId));
  const [record, sessions] = await Promise.all([
    st.redis.hmget(t.record, "owner", "created_at", "updated_at"),
    st.redis.lrange(t.sessions, 0, -1),
  ]);
  const [owner, created, updated] = record;
  if (owner === null || owner === undefined) return null;
  return Thread.parse({
    thread_id: threadId,
    owner: owner === "" ? null : owner,
    created_at: Number(created),
    updated_at: Number(updated ?? created),
    sessions,
  });
}

/** `keepThreadRefs`: KEEP_THREAD_REFS_LUA over the thread's record and references. */
async function keepThreadRefs(
  st: RedisState,
  threadId: string,
  owner: string | null,
  refs: readonly string[],
): Promise<boolean> {
  const t = st.keys.thread(threadId);
  const r = await st.scripts.keepThreadRefs(
    [t.record, t.refs],
    [owner ?? "", st.o.longTermRefsMax, st.o.longTermRefsTtlMs, ...refs],
  );
  return Number(r) === 1;
}

/** `loadThreadRefs`: the references, while the thread exists (a new thread drops what an expired one left). */
async function loadThreadRefs(st: RedisState, threadId: string): Promise<string[]> {
  const t = st.keys.thread(threadId);
  const [[owner], refs] = await Promise.all([st.redis.hmget(t.record, "owner"), st.redis.lrange(t.refs, 0, -1)]);
  return owner === null || owner === undefined ? [] : refs;
}

/** `ttls`: each of the session's keys' PTTL, in one pipeline. */
async function ttls(st: RedisState, sessionId: string): Promise<Record<string, number>> {
  const s = st.k(sessionId);
  const pipe = st.redis.pipeline();
  for (const name of SESSION_KEY_NAMES) pipe.pttl(s[name]);
  const replies = (await pipe.exec()) ?? [];
  const out: Record<string, number> = {};
  SESSION_KEY_NAMES.forEach((name, i) => {
    const [err, v] = replies[i] ?? [new Error("no reply"), null];
    if (err) throw err;
    out[name] = Number(v);
  });
  return out;
}

/** Maps the commit script's tagged reply onto CommitResult; anything else is our bug. */
function parseCommitReply(reply: unknown[]): CommitResult {
  switch (String(reply[0])) {
    case "ok":
      return { ok: true };
    case "missing":
      return { ok: false, reason: "missing" };
    case "already_applied":
      return { ok: false, reason: "already_applied" };
    case "conflict":
      return { ok: false, reason: "conflict", currentVersion: Number(reply[1]) };
    default:
      throw new Error(`unexpected commit script reply ${JSON.stringify(reply)}`);
  }
}
