import { redactText } from "@agentmesh/contracts";
import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** Field names whose values are secret wherever they appear (one level deep). */
const SECRET_FIELDS = [
  "apiKey",
  "api_key",
  "password",
  "pass",
  "token",
  "secret",
  "seed", // an NKey seed
  "authorization",
  "Authorization",
  "x-subscription-token",
];

/**
 * The one logger of a process; context is bound with child loggers. Secrets are redacted twice:
 * fields named like secrets are censored, and every written line passes `redactText` (URL
 * credentials, and each value of `secrets`, e.g. `secretsOf(env)`, wherever it appears).
 */
export function createLogger(opts: {
  service: string;
  level: string;
  secrets?: readonly string[];
  destination?: DestinationStream;
}): Logger {
  // A secret with quotes or backslashes appears JSON-escaped in the line: redact that form too.
  const secrets = (opts.secrets ?? []).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
  const options: pino.LoggerOptions = {
    name: opts.service,
    level: opts.level,
    base: { service: opts.service, pid: process.pid },
    redact: {
      paths: SECRET_FIELDS.flatMap((f) => [`["${f}"]`, `*["${f}"]`, `*.headers["${f}"]`]),
      censor: "[redacted]",
    },
    hooks: { streamWrite: (line) => redactText(line, secrets) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

const LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace"]);
const noop = (): void => undefined;

/**
 * A child of `parent` with `bindings` that is made only when a line is written at an enabled
 * level (or anything else of the logger is used). A pino child is costly to make (its bindings
 * pass the redaction), and most tasks write no line below the process's level.
 */
export function lazyChild(parent: Logger, bindings: pino.Bindings): Logger {
  let child: Logger | undefined;
  const made = (): Logger => (child ??= parent.child(bindings));
  return new Proxy({} as Logger, {
    get(_target, prop) {
      if (child === undefined && typeof prop === "string") {
        if (LEVELS.has(prop) && !parent.isLevelEnabled(prop)) return noop;
        // a child has its parent's level until it is given its own
        if (prop === "level") return parent.level;
        if (prop === "isLevelEnabled") return (level: string) => parent.isLevelEnabled(level);
      }
      const c = made();
      const v: unknown = Reflect.get(c, prop, c);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(c) : v;
    },
    set(_target, prop, value) {
      return Reflect.set(made(), prop, value);
    },
  });
}
