import type { Logger } from "pino";
import { redactText } from "@agentmesh/contracts";
import type { Health } from "./health.js";

/** Something running that can be stopped gracefully. */
export interface Stoppable {
  stop(graceMs: number): Promise<void>;
}

/**
 * Formats a start-up failure for a person: one clear line, never a stack trace, never a secret
 * (URL credentials and each of `secrets`, e.g. `secretsOf(env)`, are redacted).
 */
export function describeFailure(err: unknown, secrets: readonly string[] = []): string {
  return redactText(err instanceof Error ? err.message : String(err), secrets);
}

/**
 * Runs a service until SIGTERM/SIGINT, then stops it within `graceMs`. A start-up failure
 * prints one clear line and exits 1. With `health`, the process is marked started once `start`
 * resolves and draining the moment a signal arrives (before `stop` runs), so `/readyz` turns 503
 * while in-flight work finishes.
 */
export async function runUntilSignalled(opts: {
  name: string;
  log: Logger;
  graceMs?: number;
  secrets?: readonly string[];
  health?: Health;
  start: () => Promise<Stoppable>;
}): Promise<void> {
  const grace = opts.graceMs ?? 25_000;
  let running: Stoppable;
  try {
    running = await opts.start();
  } catch (err) {
    process.stderr.write(`${opts.name}: ${describeFailure(err, opts.secrets)}\n`);
    opts.log.debug({ err }, "start-up failed");
    process.exit(1);
  }
  opts.health?.started();
  // how V8's code cache served a process started from a process bundle (dist/launcher.js sets it)
  const codeCache = (globalThis as Record<symbol, unknown>)[Symbol.for("agentmesh.codeCache")];
  opts.log.info(typeof codeCache === "string" ? { code_cache: codeCache } : {}, "started");
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    opts.health?.drain();
    opts.log.info({ signal }, "stopping");
    const hard = setTimeout(() => process.exit(1), grace + 5000);
    hard.unref();
    running.stop(grace).then(
      () => process.exit(0),
      (err: unknown) => {
        opts.log.error({ err }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}
