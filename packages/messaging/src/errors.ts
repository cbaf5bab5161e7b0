import { AgentmeshError, formatZodError, type ErrorCode } from "@agentmesh/contracts";
import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";

/** "no suitable peers for placement": too few nodes up for a replicated stream or consumer. */
export const NO_SUITABLE_PEERS = 10005;

/**
 * Failures a NATS cluster shows while a node restarts or a leader is being elected, which the
 * same request survives a moment later: a timed-out or unanswered request, the server's 503s
 * ("JetStream system temporarily unavailable", "insufficient resources") and "no suitable peers".
 * Looks through our own error to its cause.
 */
export function transientNatsFailure(err: unknown): boolean {
  const e = err instanceof AgentmeshError && err.cause !== undefined ? err.cause : err;
  if (e instanceof TimeoutError || e instanceof NoRespondersError) return true;
  if (e instanceof RequestError) return e.isNoResponders() || e.cause instanceof TimeoutError;
  if (e instanceof JetStreamApiError) return e.status === 503 || e.code === NO_SUITABLE_PEERS;
  return false;
}

/**
 * Runs `fn` again (with backoff up to 2 s) while it fails with a transient cluster failure, until
 * `forMs` has passed; any other failure, or the last one, is thrown.
 */
export async function retryTransient<T>(fn: () => Promise<T>, forMs: number): Promise<T> {
  const until = Date.now() + forMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!transientNatsFailure(err) || Date.now() >= until) throw err;
      await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** Math.min(attempt, 5))));
    }
  }
}
import { ZodError } from "zod";

/**
 * What a value thrown into the transport means: a schema failure is `invalid_message`, a NATS
 * timeout `timeout`, a missing responder `unavailable`, an abort `cancelled`; the rest goes
 * through `AgentmeshError.from` (ours as it is, anything else `internal`).
 */
export function thrownError(err: unknown): AgentmeshError {
  if (err instanceof ZodError) return new AgentmeshError("invalid_message", formatZodError(err), { cause: err });
  if (err instanceof TimeoutError) return new AgentmeshError("timeout", err.message || "timed out", { cause: err });
  if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) {
    return new AgentmeshError("unavailable", err.message, { cause: err });
  }
  // an abort raised by an AbortSignal (DOM-style AbortError or our own reason)
  if (err instanceof Error && err.name === "AbortError")
    return new AgentmeshError("cancelled", err.message || "aborted", { cause: err });
  return AgentmeshError.from(err);
}

/** Wraps a NATS client failure into our error, keeping the original as `cause`. */
export function natsFailure(err: unknown, what: string): AgentmeshError {
  if (err instanceof AgentmeshError) return err;
  const thrown = thrownError(err);
  // an API error is the server refusing our request (bad config, limits): retrying will not help
  const code: ErrorCode =
    err instanceof JetStreamApiError ? "internal" : thrown.code === "timeout" ? "timeout" : "unavailable";
  return new AgentmeshError(code, `${what}: ${thrown.message}`, { component: "nats", cause: err });
}
