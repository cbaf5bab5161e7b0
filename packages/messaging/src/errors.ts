import { ERROR_CODES, WireError, type ErrorCode, type Fault } from "@agentmesh/contracts";
import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { ZodError } from "zod";

/** Options of an AgentmeshError beyond its code and message. */
export interface AgentmeshErrorOptions {
  /** Overrides the code's default retryability (e.g. a thrown handler bug that a retry may fix). */
  readonly retryable?: boolean;
  /** Which component failed (an agent role, a tool, "nats", "redis"). */
  readonly component?: string | null;
  readonly cause?: unknown;
}

/** The one error class of agentmesh: a closed code, whether a retry can help, and who failed. */
export class AgentmeshError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly component: string | null;

  constructor(code: ErrorCode, message: string, opts: AgentmeshErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "AgentmeshError";
    this.code = code;
    this.retryable = opts.retryable ?? ERROR_CODES[code].retryable;
    this.component = opts.component ?? null;
  }

  /** Who is at fault, from the code table. */
  get fault(): Fault {
    return ERROR_CODES[this.code].fault;
  }
}

const MAX_MESSAGE = 4000;
const MAX_COMPONENT = 100;

function wire(code: ErrorCode, message: string, retryable: boolean, component: string | null): WireError {
  return {
    code,
    message: message.slice(0, MAX_MESSAGE),
    retryable,
    component: component === null ? null : component.slice(0, MAX_COMPONENT),
  };
}

function zodSummary(e: ZodError): string {
  return e.issues
    .slice(0, 10)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}

/** True for an abort raised by an AbortSignal (DOM-style AbortError or our own reason). */
function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === "AbortError";
}

/**
 * Converts anything thrown into a wire error. Known failures keep their meaning (our error,
 * schema failures, NATS timeouts and missing responders); anything else is `internal`.
 */
export function toWireError(err: unknown, component: string | null = null): WireError {
  if (err instanceof AgentmeshError) return wire(err.code, err.message, err.retryable, err.component ?? component);
  if (err instanceof ZodError) return wire("invalid_message", zodSummary(err), false, component);
  if (err instanceof TimeoutError) return wire("timeout", err.message || "timed out", true, component);
  if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) {
    return wire("unavailable", err.message, true, component);
  }
  if (isAbort(err)) return wire("cancelled", (err as Error).message || "aborted", false, component);
  if (err instanceof Error) return wire("internal", err.message || err.name, false, component);
  return wire("internal", typeof err === "string" ? err : `non-error thrown: ${safeString(err)}`, false, component);
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Rebuilds an AgentmeshError from its wire form (an invalid wire value becomes `internal`). */
export function fromWireError(w: WireError): AgentmeshError {
  const parsed = WireError.safeParse(w);
  if (!parsed.success) {
    return new AgentmeshError("internal", `malformed wire error: ${zodSummary(parsed.error)}`);
  }
  const { code, message, retryable, component } = parsed.data;
  return new AgentmeshError(code, message, { retryable, component });
}

/** Wraps a NATS client failure into our error, keeping the original as `cause`. */
export function natsFailure(err: unknown, what: string): AgentmeshError {
  if (err instanceof AgentmeshError) return err;
  const w = toWireError(err, "nats");
  // an API error is the server refusing our request (bad config, limits): retrying will not help
  const code: ErrorCode = err instanceof JetStreamApiError ? "internal" : w.code === "timeout" ? "timeout" : "unavailable";
  return new AgentmeshError(code, `${what}: ${w.message}`, { component: "nats", cause: err });
}
