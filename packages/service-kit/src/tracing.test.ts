import { describe, expect, it } from "vitest";
import { parseEnv, TRACING_VARS, tracingConfig } from "./env.js";
import { createTracing, TRACING_OFF } from "./tracing.js";
import { createRecordingTracing } from "./testing.js";

const config = (env: Record<string, string>) => tracingConfig(parseEnv(TRACING_VARS, env));

describe("tracing configuration", () => {
  it("is off with nothing configured, and builds no span", async () => {
    const c = config({});
    expect(c.targets).toEqual([]);
    const t = await createTracing({ serviceName: "x", config: c });
    expect(t).toBe(TRACING_OFF);
    expect(t.start("a").traceparent).toBeUndefined();
    expect(await t.run("a", {}, async (s) => s.traceparent ?? "none")).toBe("none");
  });

  it("exports to the OTLP endpoint (traces path added, or the traces URL as is) with its headers", () => {
    expect(
      config({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/",
        OTEL_EXPORTER_OTLP_HEADERS: "x-token=a%20b, x-team=core",
      }).targets,
    ).toEqual([{ url: "http://127.0.0.1:4318/v1/traces", headers: { "x-token": "a b", "x-team": "core" } }]);
    expect(
      config({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:9/t",
      }).targets.map((t) => t.url),
    ).toEqual(["http://b:9/t"]);
  });

  it("exports to Langfuse's OTLP endpoint with basic auth from its keys; a host without keys is refused", () => {
    const c = config({
      LANGFUSE_HOST: "https://lf.example",
      LANGFUSE_PUBLIC_KEY: "pk-lf-1",
      LANGFUSE_SECRET_KEY: "sk-lf-2",
    });
    expect(c.targets).toEqual([
      {
        url: "https://lf.example/api/public/otel/v1/traces",
        headers: { Authorization: `Basic ${Buffer.from("pk-lf-1:sk-lf-2").toString("base64")}` },
      },
    ]);
    expect(() => config({ LANGFUSE_HOST: "https://lf.example", LANGFUSE_PUBLIC_KEY: "pk" })).toThrow(
      /LANGFUSE_SECRET_KEY/,
    );
    const found: string[] = [];
    tracingConfig(parseEnv(TRACING_VARS, { LANGFUSE_HOST: "https://lf.example" }), found);
    expect(found).toHaveLength(1);
  });

  it("refuses malformed headers without echoing their values, and OTEL_SDK_DISABLED turns export off", () => {
    expect(() =>
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1", OTEL_EXPORTER_OTLP_HEADERS: "secretvalue" }),
    ).toThrow(/entry 1 is not key=value/);
    expect(() =>
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1", OTEL_EXPORTER_OTLP_HEADERS: "secretvalue" }),
    ).not.toThrow(/secretvalue/);
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1", OTEL_SDK_DISABLED: "1" }).targets).toEqual([]);
  });
});

describe("fixed-id spans", () => {
  it("are written with the ids, parent and start time chosen in advance", () => {
    const t = createRecordingTracing("svc");
    t.emit({
      name: "session",
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      parentSpanId: null,
      sampled: true,
      startTime: 1_700_000_000_000,
      endTime: 1_700_000_005_000,
      attributes: { a: 1, b: undefined },
    });
    t.emit({
      name: "child",
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "1111111111111111",
      parentSpanId: "00f067aa0ba902b7",
      sampled: true,
      startTime: 1_700_000_001_000,
    });
    const [root, child] = t.spans();
    expect(root).toMatchObject({
      name: "session",
      service: "svc",
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      parentSpanId: null,
      startMs: 1_700_000_000_000,
      endMs: 1_700_000_005_000,
      attributes: { a: 1 },
    });
    expect(child).toMatchObject({ spanId: "1111111111111111", parentSpanId: "00f067aa0ba902b7" });
    // ordinary spans get random ids again
    const s = t.start("next");
    s.end();
    expect(t.spans()[2]?.spanId).not.toBe("1111111111111111");
  });
});
