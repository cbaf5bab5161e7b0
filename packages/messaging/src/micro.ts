import { AgentmeshError, ERROR_CODES, type ErrorCode } from "@agentmesh/contracts";
import {
  headers as natsHeaders,
  nuid,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { parseBoundedJsonOrThrow } from "./decode.js";
import { thrownError } from "./errors.js";
import type { Log } from "./log.js";

/** ADR-32 name rule for services and endpoints. */
export const MICRO_NAME = /^[a-zA-Z0-9_-]+$/;
/** The official SemVer 2.0 regex, as ADR-32 asks. */
export const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** ADR-32 error headers. */
export const SERVICE_ERROR = "Nats-Service-Error";
export const SERVICE_ERROR_CODE = "Nats-Service-Error-Code";

/** Identity and stats source of a `$SRV` service. */
export interface MicroServiceOptions {
  /** The kind of service (an agent role); `^[a-zA-Z0-9_-]+$`. */
  readonly name: string;
  /** SemVer. */
  readonly version: string;
  readonly description?: string;
  readonly metadata?: Record<string, string>;
  /** Extra numbers for every endpoint's stats `data` (JetStream work counts: queued work is invisible to request counters). */
  readonly statsData?: () => Record<string, unknown>;
  readonly log?: Log;
}

/** A request handler: gets the parsed JSON body (undefined when empty) and returns the JSON reply. */
export type EndpointHandler = (data: unknown, headers: MsgHdrs | undefined) => Promise<unknown>;

/** Per-endpoint options. */
export interface EndpointOptions {
  /** Queue group; default "q" (ADR-32); null subscribes without a queue group. */
  readonly queue?: string | null;
  readonly metadata?: Record<string, string>;
}

/** A running `$SRV` service. */
export interface MicroService {
  /** This instance's unique id. */
  readonly id: string;
  readonly name: string;
  addEndpoint(name: string, subject: string, handler: EndpointHandler, opts?: EndpointOptions): void;
  /** Drains endpoints, waits for running handlers (bounded), then leaves `$SRV`. */
  stop(timeoutMs?: number): Promise<void>;
}

interface Endpoint {
  readonly name: string;
  readonly subject: string;
  readonly queue_group: string | null;
  readonly metadata: Record<string, string>;
  readonly sub: Subscription;
  num_requests: number;
  num_errors: number;
  last_error: string;
  /** Nanoseconds, as a bigint so long uptimes cannot lose precision. */
  processing_ns: bigint;
}

/** The ADR-32 error code for one of our codes: HTTP-like, so `nats` tooling reads it naturally. */
export function serviceErrorCode(code: ErrorCode): number {
  if (code === "payload_too_large") return 413;
  if (code === "unknown_op" || code === "unknown_session" || code === "unknown_workflow") return 404;
  if (code === "unavailable") return 503;
  switch (ERROR_CODES[code].fault) {
    case "caller":
      return 400;
    case "timeout":
      return 504;
    case "upstream":
      return 502;
    case "internal":
      return 500;
  }
}

function parseBody(m: Msg): unknown {
  if (m.data.byteLength === 0) return undefined;
  return parseBoundedJsonOrThrow(m.data, "request body");
}

/**
 * Registers an ADR-32 (`nats micro`) service: answers `$SRV.PING|INFO|STATS` for all, by name and
 * by id, and serves endpoints in queue group "q" with errors in the standard headers.
 */
export function createMicroService(nc: NatsConnection, opts: MicroServiceOptions): MicroService {
  if (!MICRO_NAME.test(opts.name))
    throw new AgentmeshError("internal", `service name "${opts.name}" must match ${MICRO_NAME}`);
  if (!SEMVER.test(opts.version))
    throw new AgentmeshError("internal", `service version "${opts.version}" is not SemVer`);
  const id = nuid.next();
  const endpoints: Endpoint[] = [];
  const running = new Set<Promise<void>>();
  let stopped = false;
  const internal = subscribeDiscovery(nc, opts.name, id, discoveryVerbs(opts, id, endpoints));

  return {
    id,
    name: opts.name,
    addEndpoint(name, subject, handler, eo = {}) {
      if (stopped) throw new AgentmeshError("internal", `service ${opts.name} is stopped`);
      if (!MICRO_NAME.test(name))
        throw new AgentmeshError("internal", `endpoint name "${name}" must match ${MICRO_NAME}`);
      if (subject.length === 0 || subject.startsWith("$SRV"))
        throw new AgentmeshError("internal", `bad endpoint subject "${subject}"`);
      const queue = eo.queue === undefined ? "q" : eo.queue;
      const holder: { ep?: Endpoint } = {};
      const sub = nc.subscribe(subject, {
        ...(queue === null ? {} : { queue }),
        callback: (err, m) => {
          if (!err && holder.ep) serve(opts.name, running, holder.ep, m, handler);
        },
      });
      const ep: Endpoint = {
        name,
        subject,
        queue_group: queue,
        metadata: { ...(eo.metadata ?? {}) },
        sub,
        num_requests: 0,
        num_errors: 0,
        last_error: "",
        processing_ns: 0n,
      };
      holder.ep = ep;
      endpoints.push(ep);
    },
    async stop(timeoutMs = 10_000) {
      if (stopped) return;
      stopped = true;
      await Promise.allSettled(endpoints.map((e) => e.sub.drain()));
      let t: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...running]), new Promise<void>((r) => (t = setTimeout(r, timeoutMs)))]);
      clearTimeout(t);
      for (const s of internal) s.unsubscribe();
    },
  };
}

/** The PING, INFO and STATS replies of one instance, read from its endpoints when asked. */
function discoveryVerbs(
  opts: MicroServiceOptions,
  id: string,
  endpoints: readonly Endpoint[],
): Record<"PING" | "INFO" | "STATS", () => unknown> {
  const started = new Date().toISOString();
  const metadata = { ...(opts.metadata ?? {}) };
  const ident = () => ({ name: opts.name, id, version: opts.version, metadata });
  const data = (): Record<string, unknown> | undefined => {
    try {
      return opts.statsData?.();
    } catch (err) {
      opts.log?.warn({ err, service: opts.name }, "statsData failed");
      return undefined;
    }
  };
  return {
    PING: () => ({ type: "io.nats.micro.v1.ping_response", ...ident() }),
    INFO: () => ({
      type: "io.nats.micro.v1.info_response",
      ...ident(),
      description: opts.description ?? "",
      endpoints: endpoints.map((e) => ({
        name: e.name,
        subject: e.subject,
        queue_group: e.queue_group ?? "",
        metadata: e.metadata,
      })),
    }),
    STATS: () => {
      const d = data();
      return {
        type: "io.nats.micro.v1.stats_response",
        ...ident(),
        started,
        endpoints: endpoints.map((e) => ({
          name: e.name,
          subject: e.subject,
          queue_group: e.queue_group ?? "",
          num_requests: e.num_requests,
          num_errors: e.num_errors,
          last_error: e.last_error,
          processing_time: Number(e.processing_ns),
          // ADR-32: truncated to a whole number; Go's time.Duration refuses fractions
          average_processing_time: e.num_requests === 0 ? 0 : Number(e.processing_ns / BigInt(e.num_requests)),
          ...(d === undefined ? {} : { data: d }),
        })),
      };
    },
  };
}

/** Answers each verb for all services, by name and by id; every instance must answer discovery, so no queue group. */
function subscribeDiscovery(
  nc: NatsConnection,
  name: string,
  id: string,
  verbs: Record<string, () => unknown>,
): Subscription[] {
  const internal: Subscription[] = [];
  for (const [verb, reply] of Object.entries(verbs)) {
    for (const subject of [`$SRV.${verb}`, `$SRV.${verb}.${name}`, `$SRV.${verb}.${name}.${id}`]) {
      internal.push(
        nc.subscribe(subject, {
          callback: (err, m) => {
            if (!err) m.respond(JSON.stringify(reply()));
          },
        }),
      );
    }
  }
  return internal;
}

/** Runs one request's handler (tracked in `running` until it ends), replying with its result or an ADR-32 error. */
function serve(service: string, running: Set<Promise<void>>, ep: Endpoint, m: Msg, handler: EndpointHandler): void {
  const t0 = process.hrtime.bigint();
  const p = (async () => {
    try {
      const result = await handler(parseBody(m), m.headers);
      m.respond(JSON.stringify(result ?? null));
    } catch (err) {
      const w = thrownError(err).toWire(service);
      const status = serviceErrorCode(w.code);
      ep.num_errors++;
      ep.last_error = `${status}:${w.message}`;
      const h = natsHeaders();
      h.set(SERVICE_ERROR, w.message.replace(/[\r\n]+/g, " ").slice(0, 1000));
      h.set(SERVICE_ERROR_CODE, String(status));
      m.respond(JSON.stringify(w), { headers: h });
    } finally {
      ep.num_requests++;
      ep.processing_ns += process.hrtime.bigint() - t0;
    }
  })();
  running.add(p);
  void p.finally(() => running.delete(p));
}
