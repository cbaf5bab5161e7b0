export { ENV_VARS, NATS_ACCESS_VARS, TRACING_VARS, tracingConfig, CONNECTION_VARS, connectionConfig, parseEnv, configError, natsAccess, secretsOf, type EnvVar, type EnvName, type EnvValues, type NatsAccess } from "./env.js";
export { createLogger, type Logger } from "./logger.js";
export { crashHook, CRASH_POINTS, type CrashPoint } from "./crash.js";
export { runUntilSignalled, describeFailure, type Stoppable } from "./lifecycle.js";
export { parseRoleModels, parsePrices } from "./model-config.js";
export {
  createTracing, TRACING_OFF,
  type Tracing, type TracingConfig, type TraceExportTarget, type SpanHandle, type SpanOptions, type FixedSpan, type SpanAttributeMap, type SpanAttributeValue, type CreateTracingOptions,
} from "./tracing.js";
