import type { RetryPolicy } from "./registry.js";

/**
 * Delay before attempt `next` (2 or 3): initial × coefficient^(next-2), capped, then moved by up
 * to ±jitter so that many callers failing together do not retry together. `random` is in [0, 1).
 */
export function backoffDelay(policy: RetryPolicy, next: number, random: () => number): number {
  const base = Math.min(
    policy.maximumIntervalMs,
    policy.initialIntervalMs * policy.backoffCoefficient ** Math.max(0, next - 2),
  );
  const spread = policy.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(base * (1 + spread)));
}

/** Sleeps `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
