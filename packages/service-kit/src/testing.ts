import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { sdkTracing } from "./tracing-sdk.js";
import type { Tracing } from "./tracing.js";

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
  const tracing = sdkTracing({
    serviceName,
    config: { targets: [], serviceName: undefined, scheduleDelayMs: 1 },
    exporter,
  });
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

/** The value of one sample `name{labels} value` in Prometheus exposition text (labels in any order), or null. */
export function metricSample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (\S+)$/i.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter(Boolean);
    if (want.length === have.length && want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return null;
}
