import { randomFillSync } from "node:crypto";
import { compiled, HEADERS, SCHEMA_VERSION, Traceparent } from "@agentmesh/contracts";
import { headers as natsHeaders, Match, type MsgHdrs } from "@nats-io/transport-node";

/** Correlation carried in the headers of every message we publish. */
export interface MessageContext {
  /** W3C traceparent to continue; a fresh one is generated when absent or invalid. */
  readonly traceparent?: string | undefined;
  /** The session's thread (header `x-thread-id`), when it has one. */
  readonly threadId?: string | null | undefined;
}

/**
 * Random bytes for trace and span ids, drawn from a pool filled 4 KiB at a time: a `randomBytes`
 * call per id cost agents ~3% of their CPU (a Buffer and a trip into OpenSSL for 8 bytes). Each
 * byte of the pool is handed out once.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;

/** `bytes` (at most the pool's size) fresh random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes <= 0 || bytes > POOL_BYTES)
    throw new RangeError(`randomHex: 1..${POOL_BYTES} bytes, got ${bytes}`);
  if (poolAt + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const h = pool.toString("hex", poolAt, poolAt + bytes);
  poolAt += bytes;
  return h;
}

function nonZeroHex(bytes: number): string {
  for (;;) {
    const h = randomHex(bytes);
    // all-zero trace and parent ids are invalid per W3C Trace Context
    if (/[^0]/.test(h)) return h;
  }
}

/** A new sampled W3C traceparent. */
export function newTraceparent(): string {
  return `00-${nonZeroHex(16)}-${nonZeroHex(8)}-01`;
}

/** Continues a trace: same trace id, a new parent id; a fresh trace when `tp` is not valid. */
export function childTraceparent(tp: string | undefined): string {
  if (!tp || !compiled(Traceparent).safeParse(tp).success) return newTraceparent();
  const [, trace, , flags] = tp.split("-") as [string, string, string, string];
  return `00-${trace}-${nonZeroHex(8)}-${flags}`;
}

/** Builds the standard header set. */
export function buildHeaders(o: {
  traceparent?: string | undefined;
  sessionId?: string | undefined;
  taskId?: string | undefined;
  threadId?: string | null | undefined;
}): MsgHdrs {
  const h = natsHeaders();
  h.set(
    HEADERS.traceparent,
    o.traceparent && compiled(Traceparent).safeParse(o.traceparent).success ? o.traceparent : newTraceparent(),
  );
  if (o.sessionId) h.set(HEADERS.sessionId, o.sessionId);
  if (o.taskId) h.set(HEADERS.taskId, o.taskId);
  if (o.threadId) h.set(HEADERS.threadId, o.threadId);
  h.set(HEADERS.schemaVersion, String(SCHEMA_VERSION));
  return h;
}

/** Reads a header written by any client (NATS header names are case-sensitive by default). */
export function readHeader(h: MsgHdrs | undefined, name: string): string | undefined {
  if (!h) return undefined;
  const v = h.get(name, Match.IgnoreCase);
  return v === "" ? undefined : v;
}

/** The traceparent a message carries, when it is a valid one. */
export function traceparentOf(h: MsgHdrs | undefined): string | undefined {
  const tp = readHeader(h, HEADERS.traceparent);
  return tp !== undefined && compiled(Traceparent).safeParse(tp).success ? tp : undefined;
}
