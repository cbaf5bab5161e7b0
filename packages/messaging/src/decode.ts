import { formatZodError, LIMITS, SCHEMA_VERSION } from "@agentmesh/contracts";
import type { z } from "zod";

/** An inbound message, checked: a typed value, or why it can never be processed. */
export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/**
 * Checks size, JSON, schema version and schema, in that order, so the log line names the first
 * thing wrong. A failure here is permanent: redelivering the same bytes cannot fix it.
 */
export function decodeMessage<S extends z.ZodType>(data: Uint8Array, schema: S, what: string): Decoded<z.infer<S>> {
  if (data.byteLength > LIMITS.maxMessageBytes) {
    return { ok: false, reason: `oversized ${what}: ${data.byteLength} bytes, limit ${LIMITS.maxMessageBytes}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return { ok: false, reason: `${what} is not JSON` };
  }
  const v = typeof raw === "object" && raw !== null ? (raw as { v?: unknown }).v : undefined;
  if (v !== SCHEMA_VERSION) {
    return { ok: false, reason: `${what} has unsupported schema version ${JSON.stringify(v) ?? "(none)"}, expected ${SCHEMA_VERSION}` };
  }
  const r = schema.safeParse(raw);
  if (!r.success) return { ok: false, reason: `invalid ${what}: ${formatZodError(r.error)}` };
  return { ok: true, value: r.data };
}

/** Exponential retry delay with a little jitter, so naks spread out instead of retrying in lockstep. */
export function retryDelayMs(
  deliveryCount: number,
  o: { baseMs?: number; capMs?: number; random?: () => number } = {},
): number {
  const base = o.baseMs ?? 500;
  const cap = o.capMs ?? 30_000;
  const n = Math.max(1, Math.floor(deliveryCount));
  const delay = Math.min(base * 2 ** Math.min(n - 1, 30), cap);
  const jitter = Math.floor((o.random ?? Math.random)() * Math.min(250, delay / 10));
  return delay + jitter;
}
