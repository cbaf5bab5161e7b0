import { formatZodError, LIMITS, SCHEMA_VERSION } from "@agentmesh/contracts";
import type { z } from "zod";

/** An inbound message, checked: a typed value, or why it can never be processed. */
export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/**
 * Deepest nesting of arrays and objects a message may have. Deeper input is refused before it is
 * parsed: a 100,000-level value fits in the byte limit and passes `z.unknown()`, and then makes
 * every `JSON.stringify` after it throw (a log line, a commit): a poison message.
 */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of `[`/`{` in JSON text (brackets inside strings do not count). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** Bytes → JSON value: within the byte limit, UTF-8, at most `MAX_JSON_DEPTH` deep, parseable; or why not. */
export function parseJsonBody(data: Uint8Array, what: string): Decoded<unknown> {
  if (data.byteLength > LIMITS.maxMessageBytes) {
    return { ok: false, reason: `oversized ${what}: ${data.byteLength} bytes, limit ${LIMITS.maxMessageBytes}` };
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(data);
  } catch {
    return { ok: false, reason: `${what} is not valid UTF-8` };
  }
  const depth = jsonDepth(text);
  if (depth > MAX_JSON_DEPTH) return { ok: false, reason: `${what} nests ${depth} levels deep, limit ${MAX_JSON_DEPTH}` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, reason: `${what} is not JSON` };
  }
}

/** A short description of an unexpected value for an error message (never the whole value). */
export function describeValue(v: unknown): string {
  if (v === undefined) return "(none)";
  if (v === null || typeof v !== "object") return (JSON.stringify(v) ?? String(typeof v)).slice(0, 40);
  return Array.isArray(v) ? "a list" : "an object";
}

/**
 * Checks size, UTF-8, nesting, JSON, schema version and schema, in that order, so the log line
 * names the first thing wrong. A failure here is permanent: redelivering the same bytes cannot fix it.
 */
export function decodeMessage<S extends z.ZodType>(data: Uint8Array, schema: S, what: string): Decoded<z.infer<S>> {
  const parsed = parseJsonBody(data, what);
  if (!parsed.ok) return parsed;
  const raw = parsed.value;
  const v = typeof raw === "object" && raw !== null ? (raw as { v?: unknown }).v : undefined;
  if (v !== SCHEMA_VERSION) {
    return { ok: false, reason: `${what} has unsupported schema version ${describeValue(v)}, expected ${SCHEMA_VERSION}` };
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
