/**
 * Keeps up to `size` single-use items (a sandbox worker or process that has finished starting)
 * ready, so a call does not wait for start-up. An item is handed out once and never comes back:
 * each call gets a fresh interpreter, and nothing of one call can be seen by the next.
 */
export interface WarmPool<T> {
  /** A ready item, started now if none is waiting; rejects with the start-up failure. */
  take(signal?: AbortSignal): Promise<T>;
  /** Disposes of every waiting item; later `take`s fail. */
  close(): Promise<void>;
}

/** How a warm pool starts and disposes of its items. */
export interface WarmPoolOptions<T> {
  readonly size: number;
  readonly start: () => Promise<T>;
  readonly dispose: (item: T) => void | Promise<void>;
}

/** Creates a warm pool; nothing starts until the first `take` (or `prime`). */
export function createWarmPool<T>(opts: WarmPoolOptions<T>): WarmPool<T> & { prime(): void } {
  const ready: Array<Promise<T>> = [];
  let closed = false;

  const startOne = (): Promise<T> => {
    const p = opts.start();
    // a failed start is reported to whoever takes it; this keeps it from being unhandled meanwhile
    p.catch(() => undefined);
    return p;
  };
  const refill = (): void => {
    while (!closed && ready.length < opts.size) ready.push(startOne());
  };

  return {
    prime: refill,
    async take(signal) {
      if (closed) throw new Error("pool is closed");
      const next = ready.shift() ?? startOne();
      refill();
      if (!signal) return next;
      signal.throwIfAborted();
      return await new Promise<T>((resolve, reject) => {
        const onAbort = (): void => {
          reject(signal.reason as Error);
          // the caller is gone: the item it would have used is disposed of, not reused
          next.then(
            (item) => opts.dispose(item),
            () => undefined,
          );
        };
        signal.addEventListener("abort", onAbort, { once: true });
        next.then(
          (item) => {
            signal.removeEventListener("abort", onAbort);
            if (signal.aborted) return;
            resolve(item);
          },
          (err: unknown) => {
            signal.removeEventListener("abort", onAbort);
            reject(err as Error);
          },
        );
      });
    },
    async close() {
      closed = true;
      const waiting = ready.splice(0);
      await Promise.all(
        waiting.map((p) =>
          p.then(
            (item) => opts.dispose(item),
            () => undefined,
          ),
        ),
      );
    },
  };
}
