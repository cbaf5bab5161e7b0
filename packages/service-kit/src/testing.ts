import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { createTracing, type Tracing } from "./tracing.js";

/** A finished span as tests look at it. */
export interface RecordedSpan {
  readonly name: string;
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly startMs: number;
  readonly endMs: number;
  readonly failed: boolean;
  readonly attributes: Readonly<Record<string, unknown>>;
}

const ms = (t: readonly [number, number]) => t[0] * 1000 + t[1] / 1e6;

/** Tracing that is on and keeps every finished span in memory, for tests. */
export function createRecordingTracing(serviceName = "test"): Tracing & { spans(): RecordedSpan[] } {
  const exporter = new InMemorySpanExporter();
  const tracing = createTracing({ serviceName, config: { targets: [], serviceName: undefined, scheduleDelayMs: 1 }, exporter });
  return Object.assign(Object.create(null) as object, tracing, {
    spans: (): RecordedSpan[] =>
      exporter.getFinishedSpans().map((s) => ({
        name: s.name,
        service: String(s.resource.attributes["service.name"]),
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentSpanId: s.parentSpanContext?.spanId ?? null,
        startMs: ms(s.startTime),
        endMs: ms(s.endTime),
        failed: s.status.code === 2,
        attributes: { ...s.attributes },
      })),
  });
}
