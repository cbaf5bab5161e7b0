import {
  admitPruning,
  checkLimitsOptions,
  checkOwner,
  checkRequestKey,
  type AdmitAttempt,
  type GatewayLimits,
  type LimitsOptions,
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

  const slotsOf = (owner: string) => {
    let slots = sessions.get(owner);
    if (!slots) sessions.set(owner, (slots = new Map()));
    return slots;
  };

  return {
    async allowRequest(owner) {
      checkOwner(owner);
      const t = now();
      const log = (requests.get(owner) ?? []).filter((at) => at > t - o.rateWindowMs);
      requests.set(owner, log);
      if (log.length < o.rateLimit) {
        log.push(t);
        return { allowed: true };
      }
      const gate = log[log.length - o.rateLimit] ?? t;
      return { allowed: false, retryAfterMs: gate + o.rateWindowMs - t };
    },

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
