import type { APIError, APIConnectionError, APIConnectionTimeoutError } from "openai";
import { AgentmeshError } from "@agentmesh/contracts";

/** What one failed HTTP attempt means for the next one. */
export type AttemptFailure =
  /** Another attempt may help (429, 5xx, connection error, timeout). */
  | { readonly kind: "retry"; readonly error: AgentmeshError; readonly retryAfterMs: number | null }
  /** The server rejected our `response_format`; try the next, simpler structured-output mode. */
  | { readonly kind: "fallback"; readonly error: AgentmeshError }
  /** Nothing another attempt can fix (auth, bad request, cancellation, our own bug). */
  | { readonly kind: "fail"; readonly error: AgentmeshError };

const RESPONSE_FORMAT_PROBLEM = /response_format|json_schema|json_object|structured output|guided_json|grammar/i;

/** Reads `retry-after-ms` or `retry-after` (seconds or an HTTP date) from a response. */
export function retryAfterMs(headers: Headers | undefined, now: () => number = Date.now): number | null {
  if (!headers) return null;
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after");
  if (raw === null) return null;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - now()) : null;
}

/** The `openai` package's error classes (the package is imported on the first request). */
export interface OpenAIErrorClasses {
  readonly APIError: typeof APIError;
  readonly APIConnectionError: typeof APIConnectionError;
  readonly APIConnectionTimeoutError: typeof APIConnectionTimeoutError;
}

/**
 * Classifies an error from one HTTP attempt. `formatSent` says whether the request carried a
 * `response_format`, so that a 400 about it can mean "this server lacks the feature" rather than
 * "our request is wrong".
 */
export function classifyAttemptError(
  err: unknown,
  formatSent: boolean,
  { APIError, APIConnectionError, APIConnectionTimeoutError }: OpenAIErrorClasses,
): AttemptFailure {
  if (err instanceof AgentmeshError)
    return err.retryable ? { kind: "retry", error: err, retryAfterMs: null } : { kind: "fail", error: err };
  if (err instanceof APIConnectionTimeoutError) {
    return {
      kind: "retry",
      error: new AgentmeshError("timeout", "the model endpoint did not answer in time"),
      retryAfterMs: null,
    };
  }
  if (err instanceof APIConnectionError) {
    return {
      kind: "retry",
      error: new AgentmeshError("model_error", `could not reach the model endpoint: ${causeOf(err)}`),
      retryAfterMs: null,
    };
  }
  if (err instanceof APIError && typeof err.status === "number") {
    const status = err.status;
    const detail = `${err.message}`.slice(0, 1000);
    if (status === 429) {
      return {
        kind: "retry",
        error: new AgentmeshError("model_rate_limited", `the model endpoint rate-limited us: ${detail}`),
        retryAfterMs: retryAfterMs(err.headers),
      };
    }
    if (status >= 500 || status === 408 || status === 409) {
      return {
        kind: "retry",
        error: new AgentmeshError("model_error", `the model endpoint failed: ${detail}`),
        retryAfterMs: retryAfterMs(err.headers),
      };
    }
    if (
      formatSent &&
      (status === 400 || status === 422) &&
      RESPONSE_FORMAT_PROBLEM.test(`${detail} ${err.param ?? ""}`)
    ) {
      return {
        kind: "fallback",
        error: new AgentmeshError("model_refused", `the model endpoint rejected the response format: ${detail}`),
      };
    }
    // 400 (not about the format), 401, 403, 404, 422 and the rest: the request itself is wrong
    // (auth, model name, parameters); repeating it cannot help.
    return {
      kind: "fail",
      error: new AgentmeshError("model_refused", `the model endpoint rejected the request: ${detail}`),
    };
  }
  // Anything else came from parsing or streaming a response; a fresh attempt may succeed.
  const message = err instanceof Error ? err.message : String(err);
  return {
    kind: "retry",
    error: new AgentmeshError("model_error", `the model call failed: ${message}`),
    retryAfterMs: null,
  };
}

function causeOf(err: Error): string {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
}

/** Backoff settings for our own retries (the `openai` client's are off). */
export interface BackoffPolicy {
  readonly baseMs: number;
  readonly capMs: number;
  /** A Retry-After longer than this is not waited out: the call fails and the task retries later. */
  readonly maxRetryAfterMs: number;
  readonly random: () => number;
}

/** The default backoff: 500 ms doubling to 8 s, half of it jittered; Retry-After up to 30 s. */
export const DEFAULT_BACKOFF: BackoffPolicy = {
  baseMs: 500,
  capMs: 8000,
  maxRetryAfterMs: 30_000,
  random: Math.random,
};

/**
 * How long to wait before attempt `attempt + 1`: the server's Retry-After when given, else
 * exponential backoff with jitter (so many agents rate-limited together do not retry in step).
 * Null when the server asks for a wait longer than the policy allows.
 */
export function backoffDelay(attempt: number, retryAfter: number | null, policy: BackoffPolicy): number | null {
  if (retryAfter !== null) return retryAfter <= policy.maxRetryAfterMs ? retryAfter : null;
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (policy.random() * ceiling) / 2);
}

/** Sleeps via `sleep`, but gives up as soon as `signal` aborts. */
export async function sleepUnlessAborted(
  ms: number,
  sleep: (ms: number) => Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (!signal) return sleep(ms);
  if (signal.aborted) throw new AgentmeshError("cancelled", "the model call was cancelled");
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new AgentmeshError("cancelled", "the model call was cancelled while waiting to retry"));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([sleep(ms), aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** The default sleep, a plain timer. */
export const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
