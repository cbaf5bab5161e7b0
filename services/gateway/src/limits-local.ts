import {
  admitPruning,
  checkLimitsOptions,
  checkOwner,
  checkRequestKey,
  type AdmitAttempt,
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
  const windowed = (logs: Map<string, number[]>, owner: string, limit: number, windowMs: number): RateDecision => {
    const t = now();
    const log = (logs.get(owner) ?? []).filter((at) => at > t - windowMs);
    logs.set(owner, log);
    if (log.length < limit) {
      log.push(t);
      return { allowed: true };
    }
    const gate = log[log.length - limit] ?? t;
    return { allowed: false, retryAfterMs: gate + windowMs - t };
  };

  return {
    async allowRequest(owner) {
      checkOwner(owner);
      return windowed(requests, owner, o.rateLimit, o.rateWindowMs);
    },

    async allowStreamOpen(owner) {
      checkOwner(owner);
      return windowed(opens, owner, o.streamOpenRate, o.streamOpenWindowMs);
    },

    ...localStreamLeases(o, now),

    async admit(owner, sessionId, isLive) {
      checkOwner(owner, sessionId);
      const attempt = async (ended: readonly string[]): Promise<AdmitAttempt> => {
        const slots = slotsOf(owner);
        const t = now();
        for (const sid of ended) slots.delete(sid);
        for (const [sid, lapsesAt] of slots) if (lapsesAt <= t) slots.delete(sid);
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
): Pick<GatewayLimits, "openStream" | "renewStreams" | "closeStream"> {
  const streams = new Map<string, Map<string, number>>();
  return {
    async openStream(owner, leaseId) {
      checkOwner(owner, leaseId);
      const held = mapOf(streams, owner);
      const t = now();
      for (const [id, lapsesAt] of held) if (lapsesAt <= t) held.delete(id);
      if (!held.has(leaseId) && held.size >= o.maxStreamsPerKey)
        return { ok: false, count: held.size, max: o.maxStreamsPerKey };
      held.set(leaseId, t + o.streamLeaseTtlMs);
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
