import { ERROR_CODES, type ErrorCode, type Fault } from "@agentmesh/contracts";

/** A tool failure as data: a closed code, whether another attempt can help, and who is at fault. */
export interface ToolFailure {
  readonly code: ErrorCode;
  readonly message: string;
  readonly retryable: boolean;
  readonly fault: Fault;
}

/** Options of a tool error beyond its code and message. */
export interface ToolErrorOptions {
  /** Overrides the code's default retryability from the contracts table. */
  readonly retryable?: boolean;
  readonly cause?: unknown;
}

// The one error class of this package. Private: callers build it with `toolError` and test for
// it with `isToolError`, so a duplicated module copy (tsx + vitest) still recognises it by shape.
class ToolErrorImpl extends Error implements ToolFailure {
  override readonly name = "ToolError";
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, opts: ToolErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.retryable = opts.retryable ?? ERROR_CODES[code].retryable;
  }

  get fault(): Fault {
    return ERROR_CODES[this.code].fault;
  }
}

/** The error a tool throws to fail with a typed code (anything else it throws becomes `tool_error`). */
export type ToolError = Error & ToolFailure;

/** Builds a typed tool error; retryability defaults to the code's entry in the contracts table. */
export function toolError(code: ErrorCode, message: string, opts: ToolErrorOptions = {}): ToolError {
  return new ToolErrorImpl(code, message, opts);
}

/** True for an error built by `toolError` (by shape, so it also holds across module copies). */
export function isToolError(err: unknown): err is ToolError {
  if (err instanceof ToolErrorImpl) return true;
  if (!(err instanceof Error) || err.name !== "ToolError") return false;
  const e = err as Partial<ToolFailure>;
  return typeof e.code === "string" && Object.hasOwn(ERROR_CODES, e.code) && typeof e.retryable === "boolean";
}

/** The plain failure for anything a tool threw: typed errors keep their code, the rest is `tool_error`. */
export function toToolFailure(err: unknown): ToolFailure {
  if (isToolError(err)) return { code: err.code, message: err.message, retryable: err.retryable, fault: ERROR_CODES[err.code].fault };
  const message = err instanceof Error ? err.message || err.name : String(err);
  return { code: "tool_error", message: message.slice(0, 4000), retryable: true, fault: "upstream" };
}

/** A failure value for a code (no throw), used for the executor's own refusals. */
export function failure(code: ErrorCode, message: string, retryable: boolean = ERROR_CODES[code].retryable): ToolFailure {
  return { code, message: message.slice(0, 4000), retryable, fault: ERROR_CODES[code].fault };
}
