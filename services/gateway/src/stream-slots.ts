import { ApiError } from "./http.js";

/** Seconds a client refused a stream slot is told to wait: streams end all the time, so soon. */
export const STREAM_SLOT_RETRY_S = 1;

/** Streams one replica serves at once by default. */
export const DEFAULT_MAX_OPEN_STREAMS = 10_000;

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
