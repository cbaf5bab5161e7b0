/**
 * Why one part of a process is not ready (or not alive), as a short phrase naming it, or null
 * when it is. Checks run on every probe, so they read state and never do I/O.
 */
export type HealthCheck = () => string | null;

/** A connection as a probe sees it: why it is not usable now, and why it never will be again. */
export interface LinkChecks {
  readonly whyNotReady: HealthCheck;
  readonly whyDead: HealthCheck;
}

/** A probe's answer: ok, or the first reason it is not. */
export type HealthVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * What the process's `/readyz` and `/healthz` answer from. The process adds its parts as they
 * come up (a connection, a service's consume loops); it is ready once `started()` was called,
 * every readiness check passes and it is not draining. Liveness fails only for what a restart
 * would cure (a connection closed for good); a dependency that is down but reconnecting makes
 * the process unready, never dead, so an outage of NATS does not restart every pod.
 */
export interface Health {
  /** Adds a readiness check; the first failing one (in the order added) is the 503 reason. */
  require(check: HealthCheck): void;
  /** Adds a liveness check. */
  requireAlive(check: HealthCheck): void;
  /** Connections (NATS, Redis) the process needs: each must be up to be ready, and not closed for good to be alive. */
  requireLinks(...links: readonly LinkChecks[]): void;
  /** Start-up is complete (every part added): from now on the checks decide. */
  started(): void;
  /** Shutting down (SIGTERM): not ready from now on, for good. */
  drain(): void;
  readiness(): HealthVerdict;
  liveness(): HealthVerdict;
}

const OK: HealthVerdict = Object.freeze({ ok: true });

function firstFailure(checks: readonly HealthCheck[]): HealthVerdict {
  for (const check of checks) {
    let reason: string | null;
    try {
      reason = check();
    } catch (err) {
      reason = `health check failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (reason !== null) return { ok: false, reason };
  }
  return OK;
}

/** A fresh Health: not ready (starting) until `started()`, alive until a liveness check fails. */
export function createHealth(): Health {
  const ready: HealthCheck[] = [];
  const alive: HealthCheck[] = [];
  let phase: "starting" | "running" | "draining" = "starting";
  return {
    require: (check) => void ready.push(check),
    requireAlive: (check) => void alive.push(check),
    requireLinks: (...links) => {
      for (const link of links) {
        ready.push(link.whyNotReady);
        alive.push(link.whyDead);
      }
    },
    started: () => {
      if (phase === "starting") phase = "running";
    },
    drain: () => {
      phase = "draining";
    },
    readiness: () => {
      if (phase === "draining") return { ok: false, reason: "draining (shutting down)" };
      // a part that is down says more than "starting" (e.g. waiting for NATS)
      const failed = firstFailure(ready);
      if (!failed.ok) return failed;
      return phase === "starting" ? { ok: false, reason: "starting" } : OK;
    },
    liveness: () => firstFailure(alive),
  };
}
