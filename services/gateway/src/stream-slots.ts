import { randomBytes } from "node:crypto";
import type { Log } from "@agentmesh/messaging";
import { ApiError } from "./http.js";
import type { GatewayLimits } from "./limits.js";

/** Seconds a client refused a stream slot is told to wait: streams end all the time, so soon. */
export const STREAM_SLOT_RETRY_S = 1;

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

  return {
    async open(owner) {
      const releaseSlot = slots.take();
      try {
        const rate = await o.limits.allowStreamOpen(owner);
        if (!rate.allowed) {
          const secs = Math.max(1, Math.ceil(rate.retryAfterMs / 1000));
          throw new ApiError("rate_limited", `this API key opens streams too often; retry in ${secs} s`, {
            "Retry-After": String(secs),
          });
        }
        const id = randomBytes(12).toString("base64url");
        const lease = await o.limits.openStream(owner, id);
        if (!lease.ok)
          throw new ApiError(
            "too_many_streams",
            `this API key has ${lease.count} streams open, its most (${lease.max}); close one or retry in ${STREAM_SLOT_RETRY_S} s`,
            { "Retry-After": String(STREAM_SLOT_RETRY_S) },
          );
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
