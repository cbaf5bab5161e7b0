import type { SpanExporter } from "@opentelemetry/sdk-trace-base";

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

const NOOP_SPAN: SpanHandle = Object.freeze({
  traceparent: undefined,
  setAttributes: () => {},
  fail: () => {},
  end: () => {},
});

/** Options of `createTracing`. */
export interface CreateTracingOptions {
  /** `service.name` unless the config overrides it. */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  readonly config: TracingConfig;
  /** Replaces the OTLP exporters (tests); spans then go out one by one, at once. */
  readonly exporter?: SpanExporter;
}

/**
 * Builds a process's tracing: off (`TRACING_OFF`) unless an exporter or export target is given.
 * The OpenTelemetry SDK is imported only then: a process with tracing off never loads it.
 */
export async function createTracing(opts: CreateTracingOptions): Promise<Tracing> {
  if (!opts.exporter && opts.config.targets.length === 0) return TRACING_OFF;
  const { sdkTracing } = await import("./tracing-sdk.js");
  return sdkTracing(opts);
}
