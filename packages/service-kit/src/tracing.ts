import { hostname } from "node:os";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Context, type Span } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, AlwaysOnSampler, RandomIdGenerator, SimpleSpanProcessor,
  type IdGenerator, type SpanExporter, type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { Traceparent } from "@agentmesh/contracts";

/** Attribute values a span takes; `undefined` and `null` entries are left out. */
export type SpanAttributeValue = string | number | boolean | undefined | null;
/** A span's attributes. */
export type SpanAttributeMap = Readonly<Record<string, SpanAttributeValue>>;

/** One started span (or the shared no-op one when tracing is off). */
export interface SpanHandle {
  /** This span as a W3C traceparent, for the messages sent on its behalf; undefined when tracing is off. */
  readonly traceparent: string | undefined;
  setAttributes(attributes: SpanAttributeMap): void;
  /** Marks the span failed: status error, the error as an exception event. */
  fail(err: unknown): void;
  end(): void;
}

/** How a span starts. */
export interface SpanOptions {
  /** The parent, as a W3C traceparent (a message header, a stored session trace); absent or invalid = a new trace. */
  readonly parent?: string | undefined;
  readonly attributes?: SpanAttributeMap;
  readonly kind?: "internal" | "server" | "client" | "producer" | "consumer";
  /** Start time in ms since the epoch (default now). */
  readonly startTime?: number;
}

/** A span whose ids were fixed before it was written: a session's root, a re-published transition's span. */
export interface FixedSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  /** Its parent's span id in the same trace (null: the trace's root). */
  readonly parentSpanId: string | null;
  readonly sampled: boolean;
  /** ms since the epoch. */
  readonly startTime: number;
  /** ms since the epoch (default now). */
  readonly endTime?: number;
  readonly attributes?: SpanAttributeMap;
  readonly failed?: boolean;
}

/**
 * A process's tracer. When no exporter is configured it is off: `start` returns one shared no-op
 * handle and `run` calls its function directly, so no span object is ever built; callers that
 * compute attributes check `enabled` first.
 */
export interface Tracing {
  readonly enabled: boolean;
  start(name: string, opts?: SpanOptions): SpanHandle;
  /** Runs `fn` inside a span ended when it settles (failed when it throws). */
  run<T>(name: string, opts: SpanOptions, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** Writes a span with ids chosen in advance (see `FixedSpan`), already ended. */
  emit(span: FixedSpan): void;
  /** Exports what is buffered. */
  flush(): Promise<void>;
  /** Exports what is buffered and stops exporting (drain). */
  shutdown(): Promise<void>;
}

/** One OTLP/HTTP (protobuf) destination. */
export interface TraceExportTarget {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Where and how spans go (parsed from the environment by `tracingConfig`). */
export interface TracingConfig {
  /** Empty = tracing off. */
  readonly targets: readonly TraceExportTarget[];
  /** Overrides the process's own service name (`OTEL_SERVICE_NAME`). */
  readonly serviceName: string | undefined;
  /** Longest wait before buffered spans are exported. */
  readonly scheduleDelayMs: number;
}

/** Tracing that is off: the default of every library option. */
export const TRACING_OFF: Tracing = Object.freeze({
  enabled: false,
  start: () => NOOP_SPAN,
  run: <T>(_name: string, _opts: SpanOptions, fn: (span: SpanHandle) => Promise<T>) => fn(NOOP_SPAN),
  emit: () => {},
  flush: async () => {},
  shutdown: async () => {},
});

const NOOP_SPAN: SpanHandle = Object.freeze({ traceparent: undefined, setAttributes: () => {}, fail: () => {}, end: () => {} });

const KINDS = { internal: SpanKind.INTERNAL, server: SpanKind.SERVER, client: SpanKind.CLIENT, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER } as const;

function clean(attributes: SpanAttributeMap | undefined): Attributes {
  const out: Attributes = {};
  if (!attributes) return out;
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined && v !== null) out[k] = v;
  return out;
}

/** The context of a remote parent named by a traceparent; the root context when it is absent or invalid. */
function parentContext(tp: string | undefined): Context {
  if (tp === undefined || !Traceparent.safeParse(tp).success) return ROOT_CONTEXT;
  const [, traceId, spanId, flags] = tp.split("-") as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true });
}

function handleOf(span: Span): SpanHandle {
  const sc = span.spanContext();
  return {
    traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & TraceFlags.SAMPLED) === 1 ? "01" : "00"}`,
    setAttributes: (a) => { span.setAttributes(clean(a)); },
    fail: (err) => {
      const e = err instanceof Error ? err : new Error(String(err));
      span.recordException(e);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message.slice(0, 500) });
    },
    end: () => span.end(),
  };
}

/** Options of `createTracing`. */
export interface CreateTracingOptions {
  /** `service.name` unless the config overrides it. */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  readonly config: TracingConfig;
  /** Replaces the OTLP exporters (tests); spans then go out one by one, at once. */
  readonly exporter?: SpanExporter;
}

/** Builds a process's tracing: off (`TRACING_OFF`) unless an exporter or export target is given. */
export function createTracing(opts: CreateTracingOptions): Tracing {
  const processors: SpanProcessor[] = opts.exporter
    ? [new SimpleSpanProcessor(opts.exporter)]
    : opts.config.targets.map(
        (t) =>
          new BatchSpanProcessor(new OTLPTraceExporter({ url: t.url, headers: { ...t.headers } }), {
            scheduledDelayMillis: opts.config.scheduleDelayMs,
            maxQueueSize: 4096,
            maxExportBatchSize: 512,
          }),
      );
  if (processors.length === 0) return TRACING_OFF;

  // A fixed span's ids are handed to the SDK through its id generator, for one synchronous startSpan call.
  const random = new RandomIdGenerator();
  let fixed: { traceId: string; spanId: string } | null = null;
  const idGenerator: IdGenerator = {
    generateTraceId: () => fixed?.traceId ?? random.generateTraceId(),
    generateSpanId: () => fixed?.spanId ?? random.generateSpanId(),
  };
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: opts.config.serviceName ?? opts.serviceName,
      [ATTR_SERVICE_VERSION]: opts.serviceVersion ?? "0.1.0",
      "service.instance.id": `${hostname()}-${process.pid}`,
    }),
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    idGenerator,
    spanProcessors: processors,
  });
  const tracer = provider.getTracer("agentmesh");

  const start = (name: string, o: SpanOptions = {}): SpanHandle =>
    handleOf(
      tracer.startSpan(
        name,
        { kind: KINDS[o.kind ?? "internal"], attributes: clean(o.attributes), ...(o.startTime === undefined ? {} : { startTime: o.startTime }) },
        parentContext(o.parent),
      ),
    );

  return {
    enabled: true,
    start,
    async run(name, o, fn) {
      const span = start(name, o);
      try {
        return await fn(span);
      } catch (err) {
        span.fail(err);
        throw err;
      } finally {
        span.end();
      }
    },
    emit(f) {
      const flags = f.sampled ? "01" : "00";
      const parent = f.parentSpanId === null ? undefined : `00-${f.traceId}-${f.parentSpanId}-${flags}`;
      // Without a parent the sampler decides on its own: a trace the client did not sample stays unsampled.
      if (parent === undefined && !f.sampled) return;
      fixed = { traceId: f.traceId, spanId: f.spanId };
      let span: Span;
      try {
        span = tracer.startSpan(f.name, { attributes: clean(f.attributes), startTime: f.startTime }, parentContext(parent));
      } finally {
        fixed = null;
      }
      if (f.failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(f.endTime ?? Date.now());
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
