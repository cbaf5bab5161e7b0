import { pino, type Logger } from "pino";

export type { Logger };

/** The one logger of a process; context is bound with child loggers. Secrets are redacted. */
export function createLogger(opts: { service: string; level: string; pretty?: boolean }): Logger {
  return pino({
    name: opts.service,
    level: opts.level,
    base: { service: opts.service, pid: process.pid },
    redact: { paths: ["apiKey", "*.apiKey", "password", "*.password", "authorization", "*.authorization"], censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
