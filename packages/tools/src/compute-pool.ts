import { Worker, type ResourceLimits } from "node:worker_threads";
import { AgentmeshError } from "@agentmesh/contracts";

/**
 * Worker threads for a trusted tool's synchronous CPU work (a mathjs evaluation, a BM25 index),
 * so the agent's event loop keeps answering heartbeats and `$SRV` while it runs. A worker serves
 * one call at a time; when a call's signal aborts (its deadline), that worker is terminated and
 * a fresh one replaces it later. Idle workers are kept for the caches they hold.
 */
export interface ComputePool {
  run(payload: unknown, signal: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

/** Options of a compute pool. */
export interface ComputePoolOptions {
  /** The worker entry (plain `.mjs`, so it runs without a TypeScript loader). */
  readonly url: URL;
  readonly size?: number;
  readonly resourceLimits?: ResourceLimits;
  /** Start the workers now, so the first call does not pay for loading its libraries. */
  readonly warm?: boolean;
}

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; code: string; message: string };

interface Slot {
  readonly worker: Worker;
  busy: boolean;
}

// Worker replies name a code; only these are passed through, anything else is a tool error.
const WORKER_CODES = new Set(["invalid_tool_input", "resource_exhausted", "permission_denied", "tool_error"] as const);
type WorkerCode = typeof WORKER_CODES extends Set<infer C> ? C : never;

class ComputePoolImpl implements ComputePool {
  readonly #opts: ComputePoolOptions;
  readonly #slots = new Set<Slot>();
  readonly #waiting: Array<() => void> = [];
  #nextId = 1;
  #closed = false;

  constructor(opts: ComputePoolOptions) {
    this.#opts = opts;
    if (opts.warm) for (let i = 0; i < (opts.size ?? 2); i++) this.#release(this.#spawn());
  }

  async run(payload: unknown, signal: AbortSignal): Promise<unknown> {
    const slot = await this.#acquire(signal);
    const id = this.#nextId++;
    try {
      return await new Promise<unknown>((resolve, reject) => {
        const w = slot.worker;
        const cleanup = (): void => {
          w.off("message", onMessage);
          w.off("error", onError);
          w.off("exit", onExit);
          signal.removeEventListener("abort", onAbort);
        };
        const onMessage = (m: Reply): void => {
          if (m.id !== id) return;
          cleanup();
          if (m.ok) resolve(m.value);
          else
            reject(
              new AgentmeshError(
                WORKER_CODES.has(m.code as WorkerCode) ? (m.code as WorkerCode) : "tool_error",
                m.message,
                { retryable: false },
              ),
            );
        };
        const onError = (err: Error): void => {
          cleanup();
          this.#drop(slot);
          const oom = (err as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY";
          reject(
            oom
              ? new AgentmeshError("resource_exhausted", "the computation ran out of memory")
              : new AgentmeshError("tool_error", err.message, { cause: err }),
          );
        };
        const onExit = (code: number): void => {
          cleanup();
          this.#drop(slot);
          reject(new AgentmeshError("tool_error", `worker exited (${code})`));
        };
        const onAbort = (): void => {
          cleanup();
          this.#drop(slot);
          reject(signal.reason as Error);
        };
        w.on("message", onMessage);
        w.on("error", onError);
        w.on("exit", onExit);
        signal.addEventListener("abort", onAbort, { once: true });
        w.ref();
        w.postMessage({ id, payload });
      });
    } finally {
      this.#release(slot);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#slots].map((s) => s.worker.terminate()));
    this.#slots.clear();
  }

  async #acquire(signal: AbortSignal): Promise<Slot> {
    for (;;) {
      signal.throwIfAborted();
      if (this.#closed) throw new AgentmeshError("tool_unavailable", "the tool was closed");
      for (const s of this.#slots) {
        if (!s.busy) {
          s.busy = true;
          return s;
        }
      }
      if (this.#slots.size < (this.#opts.size ?? 2)) return this.#spawn();
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(signal.reason as Error);
        signal.addEventListener("abort", onAbort, { once: true });
        this.#waiting.push(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
  }

  #spawn(): Slot {
    // plain .mjs entries: no loader hooks (tsx, vitest) are inherited from the host process; and
    // an empty environment: a worker computes from its message alone, so the host's API keys,
    // passwords and URLs are never within its reach
    const worker = new Worker(this.#opts.url, { resourceLimits: this.#opts.resourceLimits, execArgv: [], env: {} });
    const slot: Slot = { worker, busy: true };
    // a worker that dies while idle is simply forgotten; a fresh one is started when needed
    worker.on("error", () => this.#drop(slot));
    worker.on("exit", () => this.#drop(slot));
    this.#slots.add(slot);
    return slot;
  }

  #release(slot: Slot): void {
    slot.busy = false;
    if (this.#slots.has(slot)) slot.worker.unref();
    this.#waiting.shift()?.();
  }

  #drop(slot: Slot): void {
    if (!this.#slots.delete(slot)) return;
    void slot.worker.terminate();
  }
}

/** Creates a compute pool; workers start on first use. */
export function createComputePool(opts: ComputePoolOptions): ComputePool {
  return new ComputePoolImpl(opts);
}
