export {
  ENV_VARS,
  NATS_ACCESS_VARS,
  TRACING_VARS,
  tracingConfig,
  CONNECTION_VARS,
  METRICS_VARS,
  connectionConfig,
  REDIS_SENTINEL_VARS,
  redisSentinel,
  type RedisSentinelSettings,
  metricsSettings,
  parseEnv,
  configError,
  natsAccess,
  secretsOf,
  type EnvVar,
  type EnvName,
  type EnvValues,
  type MetricsSettings,
  type NatsAccess,
} from "./env.js";
export { createLogger, lazyChild, type Logger } from "./logger.js";
export { crashHook, CRASH_POINTS, type CrashPoint } from "./crash.js";
export { runUntilSignalled, describeFailure, type Stoppable } from "./lifecycle.js";
export { createHealth, type Health, type HealthCheck, type HealthVerdict, type LinkChecks } from "./health.js";
export { parseRoleModels, parsePrices } from "./model-config.js";
export {
  createTracing,
  TRACING_OFF,
  type Tracing,
  type TracingConfig,
  type TraceExportTarget,
  type SpanHandle,
  type SpanOptions,
  type FixedSpan,
  type SpanAttributeMap,
  type SpanAttributeValue,
  type CreateTracingOptions,
} from "./tracing.js";
export {
  createMetrics,
  METRIC_LABELS,
  MAX_SERIES_PER_METRIC,
  OVERFLOW_LABEL,
  TASK_SECONDS_BUCKETS,
  STEP_SECONDS_BUCKETS,
  HTTP_SECONDS_BUCKETS,
  type Metrics,
  type MetricLabel,
  type MetricSpec,
  type Labels,
  type CounterMetric,
  type GaugeMetric,
  type HistogramMetric,
  type ReadCounterSpec,
  type SampledGaugeSpec,
} from "./metrics.js";
export { startMetricsServer, startProcessMetrics, type MetricsServer, type ProcessMetrics } from "./metrics-server.js";
export { METRIC_CATALOGUE, consumerLagGauges, type CatalogueEntry, type ReadConsumerLag } from "./metric-catalogue.js";
