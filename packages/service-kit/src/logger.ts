import { redactText } from "@agentmesh/contracts";
import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** Field names whose values are secret wherever they appear (one level deep). */
const SECRET_FIELDS = ["apiKey", "api_key", "password", "pass", "token", "secret", "seed", "authorization", "Authorization", "x-subscription-token"];

/**
 * The one logger of a process; context is bound with child loggers. Secrets are redacted twice:
 * fields named like secrets are censored, and every written line passes `redactText` (URL
 * credentials, and each value of `secrets`, e.g. `secretsOf(env)`, wherever it appears).
 */
export function createLogger(opts: { service: string; level: string; secrets?: readonly string[]; destination?: DestinationStream }): Logger {
  // A secret with quotes or backslashes appears JSON-escaped in the line: redact that form too.
  const secrets = (opts.secrets ?? []).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
  const options: pino.LoggerOptions = {
    name: opts.service,
    level: opts.level,
    base: { service: opts.service, pid: process.pid },
    redact: { paths: SECRET_FIELDS.flatMap((f) => [`["${f}"]`, `*["${f}"]`, `*.headers["${f}"]`]), censor: "[redacted]" },
    hooks: { streamWrite: (line) => redactText(line, secrets) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
