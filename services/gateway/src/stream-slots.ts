import { randomBytes } from "node:crypto";
import type { Log } from "@agentmesh/messaging";
import { ApiError } from "./http.js";
import type { AnswerAdmission, GatewayLimits, IsLive } from "./limits.js";

/** Seconds a client refused a stream slot is told to wait: streams end all the time, so soon. */
export const STREAM_SLOT_RETRY_S = 1;

/**
 * Seconds a client is told to wait for a session slot: how long one takes to free is not known
 * (a session may run for minutes), so this is a polite interval for a retry, not a promise.
 */
export const SESSION_SLOT_RETRY_S = 5;

/** Streams one replica serves at once by default. */
export const DEFAULT_MAX_OPEN_STREAMS = 2_000;

/** How often a replica renews its streams' leases: a third of their default 30 s life. */
export const STREAM_HEARTBEAT_MS = 10_000;

/**
 * One replica's open streams, counted in its memory: `take` holds a slot for a stream about to
 * open (before its session is started, so a refusal starts nothing), or refuses with 503 and
 * `Retry-After` when all `max` are held; the function it returns gives the slot back (once).
 */
export interface StreamSlots {
  take(): () => void;
  /** Slots held now. */
  readonly held: number;
}

export function createStreamSlots(max: number): StreamSlots {
  let held = 0;
  return {
    take() {
      if (held >= max)
        throw new ApiError(
          "unavailable",
          `this gateway replica has ${max} streams open, its most; retry in ${STREAM_SLOT_RETRY_S} s (another replica may answer)`,
          { "Retry-After": String(STREAM_SLOT_RETRY_S) },
        );
      held++;
      let mine = true;
      return () => {
        if (!mine) return;
        mine = false;
        held--;
      };
    },
    get held() {
      return held;
    },
  };
}

/** A stream's hold on its bounds: gives its replica slot and its key's lease back (once). */
export type StreamRelease = () => void;

/**
 * The bounds on every stream a client opens (docs/gateway.md, "API keys, limits and errors"): a
 * slot of this replica (503 past its maximum), a count against the key's stream-opening rate
 * (429), and a lease in Redis against the key's open streams across replicas (429). The replica
 * renews its leases every third of their life, so a crashed replica's leases lapse by themselves.
 */
export interface StreamBounds {
  /** Takes the three for a stream of `owner`, or throws the refusal; a refusal holds nothing. */
  open(owner: string): Promise<StreamRelease>;
  /**
   * A new answer's admission in one Redis round trip (`GatewayLimits.admitAnswer`): the key's
   * request rate and a session slot for `sessionId` and, when it is `streamed`, the three of
   * `open` with them. Throws the refusal (the first bound without room); a refusal holds nothing.
   * The release gives the stream's bounds back (a no-op for an answer not streamed).
   */
  admitAnswer(
    owner: string,
    sessionId: string,
    a: { readonly streamed: boolean; readonly isLive: IsLive },
  ): Promise<StreamRelease>;
  /** Streams this replica holds open now. */
  readonly held: number;
  /** Stops the heartbeat (the leases lapse by themselves). */
  stop(): void;
}

export interface StreamBoundsOptions {
  readonly limits: GatewayLimits;
  /** Streams one replica serves at once (AGENTMESH_MAX_OPEN_STREAMS). */
  readonly maxOpenStreams: number;
  /** How often the replica renews its leases; a third of the lease's life. */
  readonly heartbeatMs: number;
  readonly log: Log;
}

export function createStreamBounds(o: StreamBoundsOptions): StreamBounds {
  const slots = createStreamSlots(o.maxOpenStreams);
  /** The leases held, by owner. */
  const leases = new Map<string, Set<string>>();
  const heartbeat = setInterval(() => {
    for (const [owner, ids] of leases)
      if (ids.size > 0)
        o.limits.renewStreams(owner, [...ids]).catch((err: unknown) => {
          o.log.warn({ err: err instanceof Error ? err.message : String(err), owner }, "stream leases not renewed");
        });
  }, o.heartbeatMs);
  heartbeat.unref();

  /** Holds the lease `id` of `owner` (taken in Redis) until the release, with the replica slot given. */
  const held = (owner: string, id: string, releaseSlot: () => void): StreamRelease => {
    const mine = leases.get(owner) ?? new Set<string>();
    leases.set(owner, mine.add(id));
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      releaseSlot();
      mine.delete(id);
      if (mine.size === 0 && leases.get(owner) === mine) leases.delete(owner);
      o.limits.closeStream(owner, id).catch((err: unknown) => {
        o.log.warn({ err: err instanceof Error ? err.message : String(err), owner }, "stream lease not given back");
      });
    };
  };
  const leaseId = () => randomBytes(12).toString("base64url");

  return {
    async open(owner) {
      const releaseSlot = slots.take();
      try {
        const rate = await o.limits.allowStreamOpen(owner);
        if (!rate.allowed) throw limitRefusal({ ok: false, refused: "stream_rate", retryAfterMs: rate.retryAfterMs });
        const id = leaseId();
        const lease = await o.limits.openStream(owner, id);
        if (!lease.ok) throw limitRefusal({ ok: false, refused: "streams", count: lease.count, max: lease.max });
        return held(owner, id, releaseSlot);
      } catch (err) {
        releaseSlot();
        throw err;
      }
    },
    async admitAnswer(owner, sessionId, a) {
      const releaseSlot = a.streamed ? slots.take() : () => {};
      try {
        const id = a.streamed ? leaseId() : undefined;
        const admitted = await o.limits.admitAnswer(owner, { sessionId, leaseId: id }, a.isLive);
        if (!admitted.ok) throw limitRefusal(admitted);
        return id === undefined ? () => {} : held(owner, id, releaseSlot);
      } catch (err) {
        releaseSlot();
        throw err;
      }
    },
    get held() {
      return slots.held;
    },
    stop() {
      clearInterval(heartbeat);
    },
  };
}

/** Seconds until a rate's window has room, as a client is told (at least 1). */
const retrySeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** The API's error for a bound that refused (docs/gateway.md, "API keys, limits and errors"). */
export function limitRefusal(r: Extract<AnswerAdmission, { ok: false }>): ApiError {
  switch (r.refused) {
    case "rate": {
      const secs = retrySeconds(r.retryAfterMs);
      return new ApiError("rate_limited", `too many requests for this API key; retry in ${secs} s`, {
        "Retry-After": String(secs),
      });
    }
    case "stream_rate": {
      const secs = retrySeconds(r.retryAfterMs);
      return new ApiError("rate_limited", `this API key opens streams too often; retry in ${secs} s`, {
        "Retry-After": String(secs),
      });
    }
    case "streams":
      return new ApiError(
        "too_many_streams",
        `this API key has ${r.count} streams open, its most (${r.max}); close one or retry in ${STREAM_SLOT_RETRY_S} s`,
        { "Retry-After": String(STREAM_SLOT_RETRY_S) },
      );
    case "sessions":
      return new ApiError(
        "too_many_sessions",
        `this API key already has ${r.count} sessions running (at most ${r.max}); wait for one to end or cancel one`,
        { "Retry-After": String(SESSION_SLOT_RETRY_S) },
      );
  }
}

/**
 * Runs a route that admits its answer with `admitAnswer`, which counts the request against the
 * key's rate: when the route fails before it `reached` the admission (a bad body, an unknown
 * thread), the request is counted here instead, and a key past its rate hears that 429 rather
 * than the route's error. So every POST counts once, as on the other routes.
 */
export async function countedOnce<T>(
  limits: GatewayLimits,
  owner: string,
  route: (reached: () => void) => Promise<T>,
): Promise<T> {
  let reached = false;
  try {
    return await route(() => {
      reached = true;
    });
  } catch (err) {
    if (!reached) {
      const d = await limits.allowRequest(owner);
      if (!d.allowed) throw limitRefusal({ ok: false, refused: "rate", retryAfterMs: d.retryAfterMs });
    }
    throw err;
  }
}
