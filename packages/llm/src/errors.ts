import { ERROR_CODES } from "@agentmesh/contracts";
import type { ModelFailure } from "./types.js";

/** The codes a model call may fail with (a subset of the contracts' closed error codes). */
export type ModelErrorCode = ModelFailure["code"];

/** Every `ModelErrorCode`, for validating scripts and foreign errors. */
export const MODEL_ERROR_CODES = [
  "model_error",
  "model_rate_limited",
  "model_invalid_output",
  "model_refused",
  "needs_model",
  "timeout",
  "cancelled",
  "internal",
] as const satisfies readonly ModelErrorCode[];

/**
 * The one error a model port throws. It carries a closed `code` and says whether another attempt
 * can help; `messaging` turns it into a `WireError` through `toModelFailure`.
 */
export class ModelError extends Error implements ModelFailure {
  override readonly name = "ModelError";
  readonly code: ModelErrorCode;
  readonly retryable: boolean;

  /** `retryable` defaults to the code's entry in the contracts' error table. */
  constructor(code: ModelErrorCode, message: string, retryable: boolean = ERROR_CODES[code].retryable) {
    super(message);
    this.code = code;
    this.retryable = retryable;
  }
}

/** True for a `ModelError` (also across realms or duplicated module copies, by shape). */
export function isModelError(err: unknown): err is ModelError {
  if (err instanceof ModelError) return true;
  if (typeof err !== "object" || err === null) return false;
  const e = err as Partial<Record<keyof ModelFailure | "name", unknown>>;
  return e.name === "ModelError" && (MODEL_ERROR_CODES as readonly unknown[]).includes(e.code) && typeof e.retryable === "boolean";
}

/** The plain, serialisable failure for an error thrown by a model port (anything else is `internal`). */
export function toModelFailure(err: unknown): ModelFailure {
  if (isModelError(err)) return { code: err.code, message: err.message, retryable: err.retryable };
  const message = err instanceof Error ? err.message : String(err);
  return { code: "internal", message: `unexpected model failure: ${message}`, retryable: false };
}

/** Hands a streamed delta to the caller's `onToken`; a callback that throws is a bug on the caller's side (`internal`). */
export function forwardDelta(onToken: (delta: string) => void, delta: string): void {
  try {
    onToken(delta);
  } catch (err) {
    throw new ModelError("internal", `the onToken callback threw: ${(err as Error).message}`, false);
  }
}
