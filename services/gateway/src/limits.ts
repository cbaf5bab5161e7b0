import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";

/**
 * Per-owner (API key name) limits of the gateway: a request rate and a number of live sessions.
 * The Redis adapter holds them in Redis under `<prefix>:rl:*`, so they hold across any number of
 * replicas; `createLocalLimits` (limits-local.ts) is its twin for tests.
 */
export interface GatewayLimits {
  /** Counts one request of `owner` if the sliding window has room; a refused request is not counted. */
  allowRequest(owner: string): Promise<RateDecision>;
  /**
   * Takes one of `owner`'s session slots for `sessionId`. Re-admitting a session that holds a
   * slot is ok and takes no second one (a retried request). When the slots are full, the held
   * sessions `isLive` says have ended are dropped and the admission tried once more.
   */
  admit(owner: string, sessionId: string, isLive: IsLive): Promise<Admission>;
  /** Frees the slot of `sessionId` (nothing when it holds none). */
  release(owner: string, sessionId: string): Promise<void>;
  /**
   * Records that `owner`'s request key `key` (a client's `Idempotency-Key`, hashed) names a request
   * whose body has digest `digest`, for `requestKeyTtlMs`: `new` the first time, `same` when it
   * named this digest already (a retry), `other` when it named another body (a client's mistake).
   */
  claimRequestKey(owner: string, key: string, digest: string): Promise<RequestKeyClaim>;
  /** Counts one stream opening of `owner` in its own sliding window (`streamOpenRate` per `streamOpenWindowMs`). */
  allowStreamOpen(owner: string): Promise<RateDecision>;
  /**
   * Takes a lease for an open stream `leaseId` of `owner`, lasting `streamLeaseTtlMs` unless
   * renewed, or refuses with the count when `maxStreamsPerKey` leases are held. A replica that
   * crashed stops renewing, and its leases lapse.
   */
  openStream(owner: string, leaseId: string): Promise<Admission>;
  /** Renews the leases named (a heartbeat of the replica serving them); a lapsed one is taken again. */
  renewStreams(owner: string, leaseIds: readonly string[]): Promise<void>;
  /** Gives a stream's lease back (nothing when it holds none). */
  closeStream(owner: string, leaseId: string): Promise<void>;
  /**
   * A new answer's whole admission in one step, all or nothing: counts one request of `owner`
   * (as `allowRequest`), takes the session slot of `sessionId` (as `admit`) and, with `leaseId`,
   * counts one stream opening and takes that stream's lease (as `allowStreamOpen` and
   * `openStream`). The first bound that has no room answers, in that order, and a refused
   * admission counts and takes nothing. When only the session slots are full, the held sessions
   * `isLive` says have ended are dropped and the admission tried once more.
   */
  admitAnswer(owner: string, a: AnswerRequest, isLive: IsLive): Promise<AnswerAdmission>;
}

/** What one answer takes: its session's slot and, when it is streamed, a stream lease. */
export interface AnswerRequest {
  readonly sessionId: string;
  readonly leaseId?: string | undefined;
}

/** The answer to `admitAnswer`: ok, or the bound that refused (a rate with its wait, a count with its maximum). */
export type AnswerAdmission =
  AnswerAdmitted | { readonly ok: false; readonly refused: "sessions"; readonly count: number; readonly max: number };

/** An admission that went through, or one refused before the session slots. */
type AnswerAdmitted =
  | { readonly ok: true }
  | { readonly ok: false; readonly refused: "rate" | "stream_rate"; readonly retryAfterMs: number }
  | { readonly ok: false; readonly refused: "streams"; readonly count: number; readonly max: number };

/** One try of `admitAnswer`, given the held sessions found ended: as its answer, but a full session count names the sessions held. */
export type AnswerAttempt =
  AnswerAdmitted | { readonly ok: false; readonly refused: "sessions"; readonly held: readonly string[] };

/** What a request key named before: nothing (`new`), this body (`same`) or another (`other`). */
export type RequestKeyClaim = "new" | "same" | "other";

/** The answer to one request: allowed, or the milliseconds until the window has room again. */
export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterMs: number };

/** The answer to an admission: ok, or refused with the live sessions the owner holds and the maximum. */
export type Admission = { readonly ok: true } | { readonly ok: false; readonly count: number; readonly max: number };

/** Whether a session that holds a slot is still running (the gateway reads its status). */
export type IsLive = (sessionId: string) => Promise<boolean>;

/** The limits and where they live. */
export interface LimitsOptions {
  /** The key prefix (AGENTMESH_PREFIX); keys are `<prefix>:rl:req:<owner>` and `<prefix>:rl:sessions:<owner>`. */
  readonly keyPrefix: string;
  /** Requests one owner may make per window (AGENTMESH_RATE_LIMIT). */
  readonly rateLimit: number;
  /** The sliding window, ms (AGENTMESH_RATE_WINDOW_MS). */
  readonly rateWindowMs: number;
  /** Sessions one owner may have live at once (AGENTMESH_MAX_CONCURRENT_SESSIONS). */
  readonly maxConcurrentSessions: number;
  /**
   * How long a slot lasts when nothing releases it (a replica crashed) and no admission finds its
   * session ended first. Re-admitting a session restarts it. Make it no shorter than a session may run.
   */
  readonly sessionTtlMs: number;
  /** How long a request key keeps the body it named (AGENTMESH_IDEMPOTENCY_TTL_MS; default 24 h). */
  readonly requestKeyTtlMs?: number;
  /** Streams one owner may have open at once across replicas (AGENTMESH_MAX_STREAMS_PER_KEY; default 20). */
  readonly maxStreamsPerKey?: number;
  /** How long a stream's lease lasts unrenewed (default 30 s; the replica renews it every third of that). */
  readonly streamLeaseTtlMs?: number;
  /** Stream openings one owner may make per `streamOpenWindowMs` (AGENTMESH_STREAM_OPEN_RATE; default 120). */
  readonly streamOpenRate?: number;
  /** The window of the stream-opening rate, ms (default a minute). */
  readonly streamOpenWindowMs?: number;
}

/** The stream bounds' defaults, where the options name none. */
export const STREAM_LIMIT_DEFAULTS = {
  maxStreamsPerKey: 20,
  streamLeaseTtlMs: 30_000,
  streamOpenRate: 120,
  streamOpenWindowMs: 60_000,
} as const;

/** A request key's life when the options name none: a day, as long as clients usually retry. */
export const REQUEST_KEY_TTL_MS = 86_400_000;
const KEY_PART = /^[A-Za-z0-9_-]{1,128}$/;

const OWNER = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MAX_SESSION_ID = 256;

/** Checks the options once, when the limits are built: they come from validated configuration, so a bad one is our bug. */
export function checkLimitsOptions(o: LimitsOptions): Required<LimitsOptions> {
  if (!/^[a-z][a-z0-9_-]{0,39}$/.test(o.keyPrefix))
    throw new Error(`invalid limits key prefix ${JSON.stringify(o.keyPrefix)}`);
  const d = STREAM_LIMIT_DEFAULTS;
  const full: Required<LimitsOptions> = {
    ...o,
    requestKeyTtlMs: o.requestKeyTtlMs ?? REQUEST_KEY_TTL_MS,
    maxStreamsPerKey: o.maxStreamsPerKey ?? d.maxStreamsPerKey,
    streamLeaseTtlMs: o.streamLeaseTtlMs ?? d.streamLeaseTtlMs,
    streamOpenRate: o.streamOpenRate ?? d.streamOpenRate,
    streamOpenWindowMs: o.streamOpenWindowMs ?? d.streamOpenWindowMs,
  };
  for (const k of [
    "rateLimit",
    "rateWindowMs",
    "maxConcurrentSessions",
    "sessionTtlMs",
    "requestKeyTtlMs",
    "maxStreamsPerKey",
    "streamLeaseTtlMs",
    "streamOpenRate",
    "streamOpenWindowMs",
  ] as const) {
    if (!Number.isSafeInteger(full[k]) || full[k] < 1)
      throw new Error(`limits option ${k} must be a positive integer, got ${full[k]}`);
  }
  return Object.freeze(full);
}

/** Owners are API key names (and `anonymous`), so they fit in a key without escaping; anything else is our bug. */
export function checkOwner(owner: string, sessionId?: string): void {
  if (!OWNER.test(owner))
    throw new Error(`invalid limits owner (${owner.length} characters): expected an API key name`);
  if (sessionId !== undefined && (sessionId.length === 0 || sessionId.length > MAX_SESSION_ID))
    throw new Error(`invalid session id for limits (${sessionId.length} characters)`);
}

/** A request key and its body's digest are hashes the gateway made (hex or base64url); anything else is our bug. */
export function checkRequestKey(owner: string, key: string, digest: string): void {
  checkOwner(owner);
  if (!KEY_PART.test(key) || !KEY_PART.test(digest)) throw new Error("invalid request key or digest: expected hashes");
}

/** One try at a slot, given the held sessions found ended: ok, or full with the sessions still held. */
export type AdmitAttempt = { readonly ok: true } | { readonly ok: false; readonly held: readonly string[] };

/**
 * The pruning both adapters share: try; when the slots are full (`heldOf` names the sessions
 * holding them), ask `isLive` about those and try once more without the ended ones. Asking only
 * when full keeps the common admission at one round trip; the answer is the same as pruning
 * first, since a free slot is free either way. The second try's answer stands: a slot another
 * replica took meanwhile is held by a live session.
 */
async function retryWithoutEnded<T>(
  attempt: (ended: readonly string[]) => Promise<T>,
  heldOf: (t: T) => readonly string[] | null,
  isLive: IsLive,
): Promise<T> {
  const first = await attempt([]);
  const held = heldOf(first);
  if (held === null) return first;
  const live = await Promise.all(held.map((sid) => isLive(sid)));
  const ended = held.filter((_, i) => live[i] !== true);
  return ended.length === 0 ? first : attempt(ended);
}

/** `admit` over one try (`retryWithoutEnded`). */
export async function admitPruning(
  attempt: (ended: readonly string[]) => Promise<AdmitAttempt>,
  isLive: IsLive,
  max: number,
): Promise<Admission> {
  const last = await retryWithoutEnded(attempt, (a) => (a.ok ? null : a.held), isLive);
  return last.ok ? last : { ok: false, count: last.held.length, max };
}

/** `admitAnswer` over one try (`retryWithoutEnded`), pruning only when the session slots alone refused. */
export async function admitAnswerPruning(
  attempt: (ended: readonly string[]) => Promise<AnswerAttempt>,
  isLive: IsLive,
  max: number,
): Promise<AnswerAdmission> {
  const sessionsHeld = (a: AnswerAttempt) => (!a.ok && a.refused === "sessions" ? a.held : null);
  const last = await retryWithoutEnded(attempt, sessionsHeld, isLive);
  if (last.ok || last.refused !== "sessions") return last;
  return { ok: false, refused: "sessions", count: last.held.length, max };
}

/** Milliseconds now by the Redis server's clock, so replicas with skewed clocks agree. */
const NOW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * A sliding-window log: one sorted-set member per counted request, scored by its time. Drops
 * those older than the window, then counts one more if there is room. When there is none, the
 * wait is until enough of the oldest leave for one more to fit (more than one when the limit was
 * lowered). Refused requests are not logged, so retrying early does not push the wait further.
 * KEYS: the owner's request log. ARGV: limit, windowMs, a random tag (unique members).
 */
const RATE_LUA = `${NOW_LUA}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1}
end
local gate = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
return {0, tonumber(gate[2]) + window - now}
`;

/**
 * One admission, atomic, so two replicas cannot both take the last slot. Members are session
 * ids scored by when their slot lapses. Drops the ended sessions named, then the lapsed ones;
 * a held session only has its slot renewed; otherwise it takes a slot if one is free, or
 * answers full with the sessions held. The key lives as long as its longest slot.
 * KEYS: the owner's sessions. ARGV: sessionId, max, ttlMs, then ended session ids.
 */
const ADMIT_LUA = `${NOW_LUA}
for i = 4, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl = tonumber(ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {'ok'}
end
return {'full', unpack(redis.call('ZRANGE', KEYS[1], 0, -1))}
`;

/**
 * A new answer's admission (`admitAnswer`), all or nothing: checks the request rate, then (with a
 * lease id) the stream-opening rate and the open streams, then the session slots, each as the
 * scripts above do; only when all have room does it count the request (and the opening) and take
 * the lease and the slot. A refusal answers which bound refused with its wait or what it holds.
 * KEYS: the owner's request log, opening log, streams, sessions. ARGV: rateLimit, rateWindowMs,
 * a random tag, sessionId, maxSessions, sessionTtlMs, leaseId ('' for none), openRate,
 * openWindowMs, maxStreams, leaseTtlMs, then ended session ids.
 */
const ANSWER_LUA = `${NOW_LUA}
local function wait(key, limit, window)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local n = redis.call('ZCARD', key)
  if n < limit then return nil end
  local gate = redis.call('ZRANGE', key, n - limit, n - limit, 'WITHSCORES')
  return tonumber(gate[2]) + window - now
end
local w = wait(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if w then return {'rate', w} end
local lease = ARGV[7]
if lease ~= '' then
  w = wait(KEYS[2], tonumber(ARGV[8]), tonumber(ARGV[9]))
  if w then return {'stream_rate', w} end
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local open = redis.call('ZCARD', KEYS[3])
  if not redis.call('ZSCORE', KEYS[3], lease) and open >= tonumber(ARGV[10]) then return {'streams', open} end
end
for i = 12, #ARGV do redis.call('ZREM', KEYS[4], ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if not redis.call('ZSCORE', KEYS[4], ARGV[4]) and redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[5]) then
  return {'sessions', unpack(redis.call('ZRANGE', KEYS[4], 0, -1))}
end
local member = now .. ':' .. ARGV[3]
redis.call('ZADD', KEYS[1], now, member)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
if lease ~= '' then
  redis.call('ZADD', KEYS[2], now, member)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[9]))
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[11]), lease)
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[11]))
end
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[6]), ARGV[4])
redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[6]))
return {'ok'}
`;

/**
 * A request key: set to the body's digest when new; otherwise whether it names the same digest.
 * KEYS: the owner's request key. ARGV: digest, ttlMs.
 */
const REQUEST_KEY_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', tonumber(ARGV[2])) then return 'new' end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 'same' end
return 'other'
`;

/**
 * A renewal of stream leases: each named one lapses `ttlMs` from now (taken again if it lapsed).
 * KEYS: the owner's streams. ARGV: ttlMs, then lease ids.
 */
const RENEW_LUA = `${NOW_LUA}
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ttl)
return #ARGV - 1
`;

/**
 * Every command the scripts and the adapter send, lower-case: the gateway's Redis ACL user
 * (session-store's acl.ts) must allow each, which limits.test.ts checks.
 */
export const LIMITS_REDIS_COMMANDS: readonly string[] = [
  ...new Set([
    ...[RATE_LUA, ADMIT_LUA, REQUEST_KEY_LUA, RENEW_LUA, ANSWER_LUA].flatMap((lua) =>
      [...lua.matchAll(/redis\.call\('([A-Z]+)'/g)].map((m) => (m[1] ?? "").toLowerCase()),
    ),
    "evalsha",
    "eval",
    "zrem",
  ]),
].sort();

type Script = (key: string | readonly string[], args: ReadonlyArray<string | number>) => Promise<unknown>;

/** Registers a script of `keys` keys with ioredis (EVALSHA, EVAL when the server lost it), under a namespaced name. */
function defineScript(redis: Redis, name: string, lua: string, keys = 1): Script {
  const cmd = `agentmeshGatewayLimits${name}`;
  redis.defineCommand(cmd, { numberOfKeys: keys, lua });
  const fn = (redis as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[cmd];
  if (typeof fn !== "function") throw new Error(`ioredis did not define ${cmd}`);
  return (key, args) => fn.call(redis, ...(typeof key === "string" ? [key] : key), ...args);
}

/** The script's reply as a list, or a clear error naming the script (a reply of another shape is our bug). */
function replyList(script: string, reply: unknown): unknown[] {
  if (!Array.isArray(reply) || reply.length === 0) throw new Error(`unexpected reply of the limits ${script} script`);
  return reply;
}

/** Creates the Redis limits on a connected client (the caller owns and closes it). */
export function createRedisLimits(redis: Redis, opts: LimitsOptions): GatewayLimits {
  const o = checkLimitsOptions(opts);
  const rate = defineScript(redis, "Rate", RATE_LUA);
  const admit = defineScript(redis, "Admit", ADMIT_LUA);
  const requestKey = defineScript(redis, "RequestKey", REQUEST_KEY_LUA);
  const renew = defineScript(redis, "Renew", RENEW_LUA);
  const answer = defineScript(redis, "Answer", ANSWER_LUA, 4);
  const key = (kind: LimitsKeyKind, owner: string) => `${o.keyPrefix}:rl:${kind}:${owner}`;
  const windowed = async (k: string, limit: number, windowMs: number): Promise<RateDecision> => {
    const [allowed, wait] = replyList("rate", await rate(k, [limit, windowMs, randomBytes(6).toString("hex")]));
    return Number(allowed) === 1 ? { allowed: true } : { allowed: false, retryAfterMs: Number(wait) };
  };
  return {
    async allowRequest(owner) {
      checkOwner(owner);
      return windowed(key("req", owner), o.rateLimit, o.rateWindowMs);
    },
    async allowStreamOpen(owner) {
      checkOwner(owner);
      return windowed(key("open", owner), o.streamOpenRate, o.streamOpenWindowMs);
    },
    async openStream(owner, leaseId) {
      checkOwner(owner, leaseId);
      const [tag, ...held] = replyList(
        "admit",
        await admit(key("streams", owner), [leaseId, o.maxStreamsPerKey, o.streamLeaseTtlMs]),
      );
      return tag === "ok" ? { ok: true } : { ok: false, count: held.length, max: o.maxStreamsPerKey };
    },
    async renewStreams(owner, leaseIds) {
      checkOwner(owner);
      for (const id of leaseIds) checkOwner(owner, id);
      if (leaseIds.length > 0) await renew(key("streams", owner), [o.streamLeaseTtlMs, ...leaseIds]);
    },
    async closeStream(owner, leaseId) {
      checkOwner(owner, leaseId);
      await redis.zrem(key("streams", owner), leaseId);
    },
    async admit(owner, sessionId, isLive) {
      checkOwner(owner, sessionId);
      const attempt = async (ended: readonly string[]): Promise<AdmitAttempt> => {
        const [tag, ...held] = replyList(
          "admit",
          await admit(key("sessions", owner), [sessionId, o.maxConcurrentSessions, o.sessionTtlMs, ...ended]),
        );
        return tag === "ok" ? { ok: true } : { ok: false, held: held.map(String) };
      };
      return admitPruning(attempt, isLive, o.maxConcurrentSessions);
    },
    async release(owner, sessionId) {
      checkOwner(owner, sessionId);
      await redis.zrem(key("sessions", owner), sessionId);
    },
    admitAnswer: redisAnswerAdmission(answer, key, o),
    async claimRequestKey(owner, k, digest) {
      checkRequestKey(owner, k, digest);
      const reply = await requestKey(`${key("idem", owner)}:${k}`, [digest, o.requestKeyTtlMs]);
      if (reply !== "new" && reply !== "same" && reply !== "other")
        throw new Error("unexpected reply of the limits request-key script");
      return reply;
    },
  };
}

/** The kinds of key the limits keep per owner: `<prefix>:rl:<kind>:<owner>`. */
type LimitsKeyKind = "req" | "sessions" | "idem" | "open" | "streams";

/** `admitAnswer` of the Redis adapter: the answer script, once, or twice when ended sessions held the slots. */
function redisAnswerAdmission(
  answer: Script,
  key: (kind: LimitsKeyKind, owner: string) => string,
  o: Required<LimitsOptions>,
): GatewayLimits["admitAnswer"] {
  return async (owner, a, isLive) => {
    checkOwner(owner, a.sessionId);
    if (a.leaseId !== undefined) checkOwner(owner, a.leaseId);
    const keys = [key("req", owner), key("open", owner), key("streams", owner), key("sessions", owner)];
    const args = [o.rateLimit, o.rateWindowMs, randomBytes(6).toString("hex"), a.sessionId, o.maxConcurrentSessions];
    const bounds = [o.sessionTtlMs, a.leaseId ?? "", o.streamOpenRate, o.streamOpenWindowMs];
    const attempt = async (ended: readonly string[]): Promise<AnswerAttempt> => {
      const [tag, ...rest] = replyList(
        "answer",
        await answer(keys, [...args, ...bounds, o.maxStreamsPerKey, o.streamLeaseTtlMs, ...ended]),
      );
      if (tag === "ok") return { ok: true };
      if (tag === "rate" || tag === "stream_rate") return { ok: false, refused: tag, retryAfterMs: Number(rest[0]) };
      if (tag === "streams") return { ok: false, refused: "streams", count: Number(rest[0]), max: o.maxStreamsPerKey };
      if (tag === "sessions") return { ok: false, refused: "sessions", held: rest.map(String) };
      throw new Error("unexpected reply of the limits answer script");
    };
    return admitAnswerPruning(attempt, isLive, o.maxConcurrentSessions);
  };
}
