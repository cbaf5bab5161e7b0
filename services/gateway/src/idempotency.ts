import { createHash } from "node:crypto";
import type { Context } from "hono";
import { ApiError } from "./http.js";
import type { GatewayLimits } from "./limits.js";

/** What a client may send as `Idempotency-Key`: 1 to 255 visible ASCII characters (a UUID, a ULID, a hash). */
const KEY = /^[\x21-\x7e]{1,255}$/;

const hash = (text: string) => createHash("sha256").update(text).digest("base64url");

/** JSON with every object's keys sorted, so one body always has one digest whatever order a client wrote. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The request's `Idempotency-Key`, checked; undefined when it sends none. */
export function idempotencyKeyOf(c: Context): string | undefined {
  const key = c.req.header("idempotency-key");
  if (key === undefined) return undefined;
  if (!KEY.test(key))
    throw new ApiError(
      "bad_request",
      "the Idempotency-Key header must be 1-255 visible ASCII characters (a UUID, for instance)",
      {},
      "Idempotency-Key",
    );
  return key;
}

/**
 * Claims `owner`'s idempotency key for this request (its route and body): the id the session is
 * submitted under, the same for every retry of the request, so a retry attaches to the session
 * the first try started (docs/gateway.md, "Idempotency"). The same key with another body is a 422.
 */
export async function claimIdempotencyKey(
  limits: GatewayLimits,
  owner: string,
  key: string,
  route: string,
  body: unknown,
): Promise<string> {
  const keyHash = hash(key);
  const claim = await limits.claimRequestKey(owner, keyHash, hash(`${route}\n${canonical(body)}`));
  if (claim === "other")
    throw new ApiError(
      "idempotency_key_reused",
      "this Idempotency-Key was sent before with another request body; use a new key for a new request",
      {},
      "Idempotency-Key",
    );
  return `key:${keyHash}`;
}
