import { hostname } from "node:os";
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type Context,
  type Span,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  AlwaysOnSampler,
  RandomIdGenerator,
  SimpleSpanProcessor,
  type IdGenerator,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { Traceparent } from "@agentmesh/contracts";
import type { CreateTracingOptions, SpanAttributeMap, SpanHandle, SpanOptions, Tracing } from "./tracing.js";

const KINDS = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
} as const;

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
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}

function handleOf(span: Span): SpanHandle {
  const sc = span.spanContext();
  return {
    traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & TraceFlags.SAMPLED) === 1 ? "01" : "00"}`,
    setAttributes: (a) => {
      span.setAttributes(clean(a));
    },
    fail: (err) => {
      const e = err instanceof Error ? err : new Error(String(err));
      span.recordException(e);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message.slice(0, 500) });
    },
    end: () => span.end(),
  };
}

/**
 * Tracing on the OpenTelemetry SDK (`createTracing` imports this module only when tracing is on;
 * the testing entry uses it directly): spans to `opts.exporter` one by one, or batched to every
 * export target over OTLP/HTTP.
 */
export function sdkTracing(opts: CreateTracingOptions): Tracing {
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
  if (processors.length === 0)
    throw new Error("sdkTracing: neither an exporter nor an export target (createTracing returns TRACING_OFF then)");

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
        {
          kind: KINDS[o.kind ?? "internal"],
          attributes: clean(o.attributes),
          ...(o.startTime === undefined ? {} : { startTime: o.startTime }),
        },
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
        span = tracer.startSpan(
          f.name,
          { attributes: clean(f.attributes), startTime: f.startTime },
          parentContext(parent),
        );
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
