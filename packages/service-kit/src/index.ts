export { ENV_VARS, NATS_ACCESS_VARS, CONNECTION_VARS, connectionConfig, parseEnv, configError, natsAccess, secretsOf, type EnvVar, type EnvName, type EnvValues, type NatsAccess } from "./env.js";
export { createLogger, type Logger } from "./logger.js";
export { crashHook, CRASH_POINTS, type CrashPoint } from "./crash.js";
export { runUntilSignalled, describeFailure, type Stoppable } from "./lifecycle.js";
export { parseRoleModels, parsePrices } from "./model-config.js";
