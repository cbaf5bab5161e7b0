import { AgentmeshError } from "@agentmesh/contracts";

/** Waits `ms`, or rejects as `cancelled` as soon as `signal` aborts (a model call's wait, not a fault). */
export function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AgentmeshError("cancelled", "the model call was cancelled", { retryable: false }));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AgentmeshError("cancelled", "the model call was cancelled", { retryable: false }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
