import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { formatZodError } from "@agentmesh/contracts";
import type { z } from "zod";

/** The gateway's error codes: each is one HTTP status. */
export const API_ERRORS = {
  bad_request: 400,
  invalid_query: 400,
  /** A Chat Completions field whose value the workflows cannot honour (`n` > 1, a required tool, …). */
  unsupported_parameter: 400,
  unauthorized: 401,
  /** Anonymous mode and a Host header that is not the gateway's own (docs/gateway.md, "HTTP"). */
  host_not_allowed: 403,
  not_found: 404,
  model_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  /** An `Idempotency-Key` sent again with another request body. */
  idempotency_key_reused: 422,
  rate_limited: 429,
  too_many_sessions: 429,
  /** The API key holds its most open streams across replicas. */
  too_many_streams: 429,
  internal: 500,
  unavailable: 503,
} as const satisfies Record<string, ContentfulStatusCode>;
export type ApiErrorCode = keyof typeof API_ERRORS;

/** A request the gateway refuses, with the one error shape every route answers in. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** The request field at fault, where one is (OpenAI's `param`). */
    readonly param: string | null = null,
  ) {
    super(message);
  }
  get status(): ContentfulStatusCode {
    return API_ERRORS[this.code];
  }
}

/** `{"error":{"code","message","status"}}`: the one error shape of `/api` (and of the page's files). */
export function errorBody(e: ApiError) {
  return { error: { code: e.code, message: e.message, status: e.status } };
}

/**
 * The request's JSON body checked against `schema`: a clear 400 naming the field for wrong types,
 * unknown fields or JSON that does not parse; 415 for another content type. Size is checked before
 * (the body limit), so this never reads more than the limit.
 */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/(.+\+)?json\b/i.test(type))
    throw new ApiError("unsupported_media_type", "send the body as JSON (Content-Type: application/json)");
  let raw: unknown;
  try {
    raw = JSON.parse(await c.req.text());
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("bad_request", `the body is not valid JSON: ${(err as Error).message}`);
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw new ApiError("bad_request", `invalid request: ${formatZodError(r.error)}`);
  return r.data;
}
