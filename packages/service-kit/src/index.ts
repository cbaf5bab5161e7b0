export { ENV_VARS, parseEnv, configError, secretsOf, type EnvVar, type EnvName, type EnvValues } from "./env.js";
export { createLogger, type Logger } from "./logger.js";
export { crashHook, CRASH_POINTS, type CrashPoint } from "./crash.js";
export { runUntilSignalled, describeFailure, type Stoppable } from "./lifecycle.js";
export { parseRoleModels, parsePrices } from "./model-config.js";
