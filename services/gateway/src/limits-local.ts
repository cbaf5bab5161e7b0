import {
  admitAnswerPruning,
  admitPruning,
  checkLimitsOptions,
  checkOwner,
  checkRequestKey,
  type AdmitAttempt,
  type AnswerAdmission,
  type AnswerAttempt,
  type AnswerRequest,
  type IsLive,
  type GatewayLimits,
  type LimitsOptions,
  type RateDecision,
} from "./limits.js";

/** Options of the local limits: the same limits, and a clock tests can move. */
export interface LocalLimitsOptions extends LimitsOptions {
  /** Milliseconds now; default `Date.now`. */
  readonly now?: () => number;
}

/**
 * The local twin of `createRedisLimits` for one process (tests, and a gateway under test
 * without Redis). Same rules, same conformance suite (testing.ts); nothing is shared between
 * processes, so it is no limit for replicas.
 */
export function createLocalLimits(opts: LocalLimitsOptions): GatewayLimits {
  const o = checkLimitsOptions(opts);
  const now = opts.now ?? Date.now;
  const requests = new Map<string, number[]>();
  const sessions = new Map<string, Map<string, number>>();
  const requestKeys = new Map<string, { digest: string; expiresAt: number }>();

  const opens = new Map<string, number[]>();
  const slotsOf = (owner: string) => mapOf(sessions, owner);
  /** The wait until the owner's window has room for one more (null: room now), its log trimmed to the window. */
  const waitIn = (logs: Map<string, number[]>, owner: string, limit: number, windowMs: number, t: number) => {
    const log = (logs.get(owner) ?? []).filter((at) => at > t - windowMs);
    logs.set(owner, log);
    if (log.length < limit) return null;
    return (log[log.length - limit] ?? t) + windowMs - t;
  };
  const windowed = (logs: Map<string, number[]>, owner: string, limit: number, windowMs: number): RateDecision => {
    const t = now();
    const wait = waitIn(logs, owner, limit, windowMs, t);
    if (wait !== null) return { allowed: false, retryAfterMs: wait };
    logs.get(owner)?.push(t);
    return { allowed: true };
  };
  /** The owner's held session slots, without those named ended and those lapsed by `t`. */
  const heldSlots = (owner: string, ended: readonly string[], t: number) => {
    const slots = slotsOf(owner);
    for (const sid of ended) slots.delete(sid);
    for (const [sid, lapsesAt] of slots) if (lapsesAt <= t) slots.delete(sid);
    return slots;
  };
  const leases = localStreamLeases(o, now);

  return {
    async allowRequest(owner) {
      checkOwner(owner);
      return windowed(requests, owner, o.rateLimit, o.rateWindowMs);
    },

    async allowStreamOpen(owner) {
      checkOwner(owner);
      return windowed(opens, owner, o.streamOpenRate, o.streamOpenWindowMs);
    },

    openStream: leases.openStream,
    renewStreams: leases.renewStreams,
    closeStream: leases.closeStream,

    admitAnswer: (owner, a, isLive) =>
      localAnswer(owner, a, isLive, { o, now, waitIn, requests, opens, leases, heldSlots }),

    async admit(owner, sessionId, isLive) {
      checkOwner(owner, sessionId);
      const attempt = async (ended: readonly string[]): Promise<AdmitAttempt> => {
        const t = now();
        const slots = heldSlots(owner, ended, t);
        if (slots.has(sessionId) || slots.size < o.maxConcurrentSessions) {
          slots.set(sessionId, t + o.sessionTtlMs);
          return { ok: true };
        }
        return { ok: false, held: [...slots.keys()] };
      };
      return admitPruning(attempt, isLive, o.maxConcurrentSessions);
    },

    async release(owner, sessionId) {
      checkOwner(owner, sessionId);
      sessions.get(owner)?.delete(sessionId);
    },

    async claimRequestKey(owner, key, digest) {
      checkRequestKey(owner, key, digest);
      const id = `${owner}:${key}`;
      const held = requestKeys.get(id);
      if (held !== undefined && held.expiresAt > now()) return held.digest === digest ? "same" : "other";
      requestKeys.set(id, { digest, expiresAt: now() + o.requestKeyTtlMs });
      return "new";
    },
  };
}

/** An owner's entry of a map of maps, made on first use. */
function mapOf<V>(all: Map<string, Map<string, V>>, owner: string): Map<string, V> {
  let m = all.get(owner);
  if (!m) all.set(owner, (m = new Map()));
  return m;
}

/** The stream leases of the local twin: each lapses `streamLeaseTtlMs` after its last renewal. */
function localStreamLeases(
  o: Required<LimitsOptions>,
  now: () => number,
): Pick<GatewayLimits, "openStream" | "renewStreams" | "closeStream"> & {
  /** Null when `leaseId` may be taken at `t`, else the leases held (the unlapsed ones, all others). */
  held(owner: string, leaseId: string, t: number): number | null;
  take(owner: string, leaseId: string, t: number): void;
} {
  const streams = new Map<string, Map<string, number>>();
  const held = (owner: string, leaseId: string, t: number) => {
    const mine = mapOf(streams, owner);
    for (const [id, lapsesAt] of mine) if (lapsesAt <= t) mine.delete(id);
    return !mine.has(leaseId) && mine.size >= o.maxStreamsPerKey ? mine.size : null;
  };
  const take = (owner: string, leaseId: string, t: number) =>
    void mapOf(streams, owner).set(leaseId, t + o.streamLeaseTtlMs);
  return {
    held,
    take,
    async openStream(owner, leaseId) {
      checkOwner(owner, leaseId);
      const t = now();
      const count = held(owner, leaseId, t);
      if (count !== null) return { ok: false, count, max: o.maxStreamsPerKey };
      take(owner, leaseId, t);
      return { ok: true };
    },

    async renewStreams(owner, leaseIds) {
      checkOwner(owner);
      for (const id of leaseIds) checkOwner(owner, id);
      const held = mapOf(streams, owner);
      for (const id of leaseIds) held.set(id, now() + o.streamLeaseTtlMs);
    },

    async closeStream(owner, leaseId) {
      checkOwner(owner, leaseId);
      streams.get(owner)?.delete(leaseId);
    },
  };
}

/** What the local twin's `admitAnswer` reads and writes. */
interface LocalAnswerState {
  readonly o: Required<LimitsOptions>;
  readonly now: () => number;
  readonly waitIn: (
    logs: Map<string, number[]>,
    owner: string,
    limit: number,
    windowMs: number,
    t: number,
  ) => number | null;
  readonly requests: Map<string, number[]>;
  readonly opens: Map<string, number[]>;
  readonly leases: ReturnType<typeof localStreamLeases>;
  readonly heldSlots: (owner: string, ended: readonly string[], t: number) => Map<string, number>;
}

/** `admitAnswer` of the local twin: every bound checked first, then all taken (as the Redis script). */
async function localAnswer(
  owner: string,
  a: AnswerRequest,
  isLive: IsLive,
  st: LocalAnswerState,
): Promise<AnswerAdmission> {
  const { o, waitIn, requests, opens, leases } = st;
  checkOwner(owner, a.sessionId);
  if (a.leaseId !== undefined) checkOwner(owner, a.leaseId);
  const attempt = async (ended: readonly string[]): Promise<AnswerAttempt> => {
    const t = st.now();
    const rate = waitIn(requests, owner, o.rateLimit, o.rateWindowMs, t);
    if (rate !== null) return { ok: false, refused: "rate", retryAfterMs: rate };
    if (a.leaseId !== undefined) {
      const open = waitIn(opens, owner, o.streamOpenRate, o.streamOpenWindowMs, t);
      if (open !== null) return { ok: false, refused: "stream_rate", retryAfterMs: open };
      const count = leases.held(owner, a.leaseId, t);
      if (count !== null) return { ok: false, refused: "streams", count, max: o.maxStreamsPerKey };
    }
    const slots = st.heldSlots(owner, ended, t);
    if (!slots.has(a.sessionId) && slots.size >= o.maxConcurrentSessions)
      return { ok: false, refused: "sessions", held: [...slots.keys()] };
    requests.get(owner)?.push(t);
    if (a.leaseId !== undefined) {
      opens.get(owner)?.push(t);
      leases.take(owner, a.leaseId, t);
    }
    slots.set(a.sessionId, t + o.sessionTtlMs);
    return { ok: true };
  };
  return admitAnswerPruning(attempt, isLive, o.maxConcurrentSessions);
}
