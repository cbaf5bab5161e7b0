import {
  AgentmeshError,
  WireError,
  compiled,
  formatZodError,
  type Endpoint,
  type ErrorCode,
} from "@agentmesh/contracts";
import { NoRespondersError, RequestError, TimeoutError, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { parseBoundedJsonOrThrow } from "./decode.js";
import { natsFailure } from "./errors.js";
import { SERVICE_ERROR, SERVICE_ERROR_CODE } from "./micro.js";
import { encodeBounded } from "./publisher.js";
import { buildHeaders, readHeader, type MessageContext } from "./trace.js";

function isTimeout(err: unknown): boolean {
  return err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError);
}

function isNoResponders(err: unknown): boolean {
  return err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders());
}

/** Our code for an ADR-32 status a service sent without a wire error body. */
function codeForStatus(status: number): ErrorCode {
  if (status === 404) return "unknown_op";
  if (status === 413) return "payload_too_large";
  if (status === 503) return "unavailable";
  if (status === 504) return "timeout";
  if (status >= 400 && status < 500) return "invalid_message";
  return "internal";
}

function serviceError(m: Msg, subject: string): AgentmeshError | null {
  const status = readHeader(m.headers, SERVICE_ERROR_CODE);
  if (status === undefined) return null;
  try {
    const w = WireError.safeParse(JSON.parse(m.string()));
    if (w.success) return AgentmeshError.fromWire(w.data);
  } catch {
    // a service other than ours: fall back to the headers
  }
  const text = readHeader(m.headers, SERVICE_ERROR) ?? "service error";
  return new AgentmeshError(codeForStatus(Number(status)), `${subject}: ${text} (${status})`);
}

/**
 * Core request/reply with a JSON body. To an endpoint (its subject and schemas): the body is typed
 * by the endpoint's request schema and the reply is checked against its response schema, once, here
 * (a reply that fails it is `invalid_message`). To a bare subject: the parsed reply as it came (null
 * when empty). No service → `unavailable`; no reply in time → `timeout`; an ADR-32 error reply →
 * its typed error.
 */
export async function request<Q extends z.ZodType, R extends z.ZodType>(
  nc: NatsConnection,
  endpoint: Endpoint<Q, R>,
  body: z.input<Q>,
  timeoutMs: number,
  ctx?: MessageContext,
): Promise<z.output<R>>;
export async function request(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  timeoutMs: number,
  ctx?: MessageContext,
): Promise<unknown>;
export async function request(
  nc: NatsConnection,
  target: string | Endpoint,
  body: unknown,
  timeoutMs: number,
  ctx?: MessageContext,
): Promise<unknown> {
  if (typeof target === "string") return requestRaw(nc, target, body, timeoutMs, ctx);
  const reply = await requestRaw(nc, target.subject, body, timeoutMs, ctx);
  const parsed = compiled(target.response).safeParse(reply);
  if (!parsed.success)
    throw new AgentmeshError(
      "invalid_message",
      `the reply on ${target.subject} is not what the endpoint answers: ${formatZodError(parsed.error)}`,
    );
  return parsed.data;
}

async function requestRaw(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  timeoutMs: number,
  ctx?: MessageContext,
): Promise<unknown> {
  const data = encodeBounded(body ?? null, `request to ${subject}`);
  let reply: Msg;
  try {
    reply = await nc.request(subject, data, {
      timeout: timeoutMs,
      headers: buildHeaders({ traceparent: ctx?.traceparent }),
    });
  } catch (err) {
    if (isNoResponders(err)) {
      throw new AgentmeshError(
        "unavailable",
        `no service answers on ${subject}; is it running and connected to the same NATS?`,
        { cause: err },
      );
    }
    if (isTimeout(err))
      throw new AgentmeshError("timeout", `no reply on ${subject} within ${timeoutMs} ms`, { cause: err });
    throw natsFailure(err, `request on ${subject} failed`);
  }
  const failure = serviceError(reply, subject);
  if (failure) throw failure;
  if (reply.data.byteLength === 0) return null;
  // a reply's size is bounded by the server's max_payload; its nesting only by us
  return parseBoundedJsonOrThrow(reply.data, `reply on ${subject}`, Number.POSITIVE_INFINITY);
}

const Meta = z
  .record(z.string(), z.string())
  .nullable()
  .optional()
  .transform((m) => m ?? {});
const InfoReply = z.object({
  type: z.literal("io.nats.micro.v1.info_response"),
  name: z.string(),
  id: z.string().min(1),
  version: z.string(),
  metadata: Meta,
  description: z
    .string()
    .optional()
    .transform((d) => d ?? ""),
  endpoints: z
    .array(
      z.object({
        name: z.string(),
        subject: z.string(),
        queue_group: z
          .string()
          .optional()
          .transform((q) => q ?? ""),
        metadata: Meta,
      }),
    )
    .nullable()
    .optional()
    .transform((e) => e ?? []),
});
const StatsReply = z.object({
  type: z.literal("io.nats.micro.v1.stats_response"),
  name: z.string(),
  id: z.string().min(1),
  version: z.string(),
  metadata: Meta,
  started: z.string(),
  endpoints: z
    .array(
      z.object({
        name: z.string(),
        subject: z.string(),
        queue_group: z
          .string()
          .optional()
          .transform((q) => q ?? ""),
        num_requests: z.number(),
        num_errors: z.number(),
        last_error: z
          .string()
          .optional()
          .transform((e) => e ?? ""),
        processing_time: z.number(),
        average_processing_time: z.number(),
        data: z.unknown().optional(),
      }),
    )
    .nullable()
    .optional()
    .transform((e) => e ?? []),
});

/** A `$SRV.INFO` reply (ADR-32), normalised: missing metadata and lists become empty. */
export type ServiceInfo = z.infer<typeof InfoReply>;
/** A `$SRV.STATS` reply (ADR-32), normalised; our services put JetStream work counts in `endpoints[].data`. */
export type ServiceStats = z.infer<typeof StatsReply>;

/** One running service instance: its INFO and, when it answered in time, its STATS. */
export interface ServiceSummary {
  readonly info: ServiceInfo;
  readonly stats: ServiceStats | null;
}

async function gather(nc: NatsConnection, subject: string, timeoutMs: number): Promise<unknown[]> {
  const out: unknown[] = [];
  try {
    const replies = await nc.requestMany(subject, undefined, { strategy: "timer", maxWait: timeoutMs });
    for await (const m of replies) {
      try {
        out.push(JSON.parse(m.string()));
      } catch {
        // not a micro service reply; skip it like `nats micro` does
      }
    }
  } catch (err) {
    if (isNoResponders(err)) return out;
    throw natsFailure(err, `discovery on ${subject} failed`);
  }
  return out;
}

/**
 * Collects every service instance answering `$SRV.INFO` within timeoutMs and joins in its
 * `$SRV.STATS`; with `name`, only that service's (`$SRV.INFO.<name>`: all a role's own NATS user
 * may ask, for its health probe).
 */
export async function listServices(nc: NatsConnection, timeoutMs: number, name?: string): Promise<ServiceSummary[]> {
  const scope = name === undefined ? "" : `.${name}`;
  const [infos, stats] = await Promise.all([
    gather(nc, `$SRV.INFO${scope}`, timeoutMs),
    gather(nc, `$SRV.STATS${scope}`, timeoutMs),
  ]);
  const statsById = new Map<string, ServiceStats>();
  for (const raw of stats) {
    const r = StatsReply.safeParse(raw);
    if (r.success) statsById.set(r.data.id, r.data);
  }
  const out: ServiceSummary[] = [];
  for (const raw of infos) {
    const r = InfoReply.safeParse(raw);
    if (r.success) out.push({ info: r.data, stats: statsById.get(r.data.id) ?? null });
  }
  return out.sort((a, b) => a.info.name.localeCompare(b.info.name) || a.info.id.localeCompare(b.info.id));
}
