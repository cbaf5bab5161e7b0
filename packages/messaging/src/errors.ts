import { AgentmeshError, formatZodError, type ErrorCode } from "@agentmesh/contracts";
import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
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
