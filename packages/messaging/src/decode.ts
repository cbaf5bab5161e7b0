import { AgentmeshError, compiled, formatZodError, LIMITS, SCHEMA_VERSION } from "@agentmesh/contracts";
import type { z } from "zod";

/** An inbound message, checked: a typed value, or why it can never be processed (a permanent, typed failure). */
export type Decoded<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly code: "invalid_message" | "payload_too_large"; readonly reason: string };

const OPEN = 0x5b; // [
const CLOSE = 0x5d; // ]
const OPEN_OBJ = 0x7b; // {
const CLOSE_OBJ = 0x7d; // }
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The deepest object/array nesting in JSON text, counted without recursion and without parsing,
 * stopping as soon as `max` is passed (a deep value parses fine but breaks every recursive walk
 * after it: stringify, schema checks, the session store). Brackets inside strings do not count.
 */
export function jsonDepthOver(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN || c === OPEN_OBJ) {
      if (++depth > max) return true;
    } else if (c === CLOSE || c === CLOSE_OBJ) depth--;
  }
  return false;
}

/** Bytes to a JSON value within the size and nesting limits; a typed failure says which check failed. */
export function parseBoundedJson(
  data: Uint8Array,
  what: string,
  maxBytes: number = LIMITS.maxMessageBytes,
): { ok: true; value: unknown } | Extract<Decoded<never>, { ok: false }> {
  if (data.byteLength > maxBytes) {
    return {
      ok: false,
      code: "payload_too_large",
      reason: `oversized ${what}: ${data.byteLength} bytes, limit ${maxBytes}`,
    };
  }
  if (jsonDepthOver(data, LIMITS.maxJsonDepth)) {
    return {
      ok: false,
      code: "invalid_message",
      reason: `${what} nests JSON deeper than ${LIMITS.maxJsonDepth} levels`,
    };
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(data);
  } catch {
    return { ok: false, code: "invalid_message", reason: `${what} is not valid UTF-8` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, code: "invalid_message", reason: `${what} is not JSON` };
  }
}

/** Like parseBoundedJson, but throws the failure as an `AgentmeshError` (request/reply paths). */
export function parseBoundedJsonOrThrow(data: Uint8Array, what: string, maxBytes?: number): unknown {
  const r = parseBoundedJson(data, what, maxBytes);
  if (!r.ok) throw new AgentmeshError(r.code, r.reason);
  return r.value;
}

/** A short description of an unexpected value for an error message (never the whole value). */
export function describeValue(v: unknown): string {
  if (v === undefined) return "(none)";
  if (v === null || typeof v !== "object") return (JSON.stringify(v) ?? String(typeof v)).slice(0, 40);
  return Array.isArray(v) ? "a list" : "an object";
}

/**
 * Checks size, nesting, JSON, schema version and schema, in that order, so the log line names
 * the first thing wrong. A failure here is permanent: redelivering the same bytes cannot fix it.
 * Every consumer of the bus (tasks, inbox, events, endpoints, replies) decodes through here.
 */
export function decodeMessage<S extends z.ZodType>(data: Uint8Array, schema: S, what: string): Decoded<z.infer<S>> {
  const parsed = parseBoundedJson(data, what);
  if (!parsed.ok) return parsed;
  return decodeValue(parsed.value, schema, what, (v) => v);
}

/** The schema-version and schema half of `decodeMessage`, for a value already parsed within bounds; `map` shapes the result. */
export function decodeValue<S extends z.ZodType, T>(
  raw: unknown,
  schema: S,
  what: string,
  map: (v: z.infer<S>) => T,
): Decoded<T> {
  const v = typeof raw === "object" && raw !== null ? (raw as { v?: unknown }).v : undefined;
  if (v !== SCHEMA_VERSION) {
    return {
      ok: false,
      code: "invalid_message",
      reason: `${what} has unsupported schema version ${describeValue(v)}, expected ${SCHEMA_VERSION}`,
    };
  }
  const r = compiled(schema).safeParse(raw);
  if (!r.success) return { ok: false, code: "invalid_message", reason: `invalid ${what}: ${formatZodError(r.error)}` };
  return { ok: true, value: map(r.data) };
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
