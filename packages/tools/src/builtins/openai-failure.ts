import { AgentmeshError, redactText } from "@agentmesh/contracts";
import type * as OpenAISdk from "openai";
import { readBodyCapped } from "./read-capped.js";

// What the OpenAI-compatible providers of the tools (images, embeddings) share: a response size
// cap before the client parses, and the client's failures as our typed errors.

/** A fetch whose response bodies are read whole, up to `max` bytes, before the client sees them. */
export function cappedFetch(inner: typeof globalThis.fetch, max: number, endpoint: string): typeof globalThis.fetch {
  const tooBig = () =>
    new AgentmeshError("tool_error", `${endpoint}'s response is over ${max} bytes`, { retryable: false });
  return async (input, init) => {
    const res = await inner(input, init);
    if (Number(res.headers.get("content-length") ?? 0) > max) {
      await res.body?.cancel();
      throw tooBig();
    }
    const body = await readBodyCapped(res, max, tooBig);
    if (body === null) return res;
    const headers = new Headers(res.headers);
    headers.delete("content-encoding");
    headers.delete("content-length");
    return new Response(body, { status: res.status, statusText: res.statusText, headers });
  };
}

/**
 * What a call of an OpenAI-compatible endpoint (images, embeddings) threw, as our error: the abort's reason, a typed error as it
 * is, else classified by the client's error classes (once loaded) with the key redacted.
 */
export function endpointFailure(
  err: unknown,
  what: string,
  signal: AbortSignal,
  on: { readonly sdk: typeof OpenAISdk | null; readonly secrets: readonly string[]; readonly endpoint: string },
): Error {
  const { sdk, secrets, endpoint } = on;
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk ?? {};
  if (signal.aborted)
    return signal.reason instanceof Error ? signal.reason : new AgentmeshError("cancelled", `${what} was cancelled`);
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (err instanceof AgentmeshError) return err;
  if (cause instanceof AgentmeshError) return cause;
  if (APIUserAbortError && err instanceof APIUserAbortError)
    return new AgentmeshError("cancelled", `${what} was cancelled`);
  if (APIConnectionTimeoutError && err instanceof APIConnectionTimeoutError)
    return new AgentmeshError("timeout", `${endpoint} did not answer ${what} in time`);
  if (APIConnectionError && err instanceof APIConnectionError) {
    const why = cause instanceof Error ? `: ${redactText(cause.message, secrets).slice(0, 200)}` : "";
    return new AgentmeshError("tool_error", `could not reach ${endpoint} for ${what}${why}`, {
      retryable: true,
    });
  }
  if (APIError && err instanceof APIError && typeof err.status === "number") {
    const said = (err.error as { message?: unknown } | undefined)?.message;
    const detail =
      typeof said === "string" && said ? `: ${redactText(said, secrets).replace(/\s+/g, " ").slice(0, 300)}` : "";
    if (err.status === 401 || err.status === 403)
      return new AgentmeshError("tool_unavailable", `${endpoint} refused the API key for ${what} (HTTP ${err.status})`);
    // rate limits and server errors pass; other client errors will not improve on retry
    const retryable = err.status === 429 || err.status === 408 || err.status >= 500;
    return new AgentmeshError("tool_error", `${endpoint} answered ${what} with HTTP ${err.status}${detail}`, {
      retryable,
    });
  }
  return new AgentmeshError(
    "tool_error",
    `${what} failed: ${redactText(err instanceof Error ? err.message : String(err), secrets).slice(0, 300)}`,
    { retryable: false },
  );
}
