import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { AgentmeshError } from "@agentmesh/contracts";
import { createWarmPool } from "../warm-pool.js";
import { createSlots, type Slot } from "./slots.js";
import type { CodeRunner, CodeRunResult, RunOptions, SandboxStatus } from "./types.js";
import { packageFile } from "../files.js";

/** Limits of the JavaScript runner. */
export interface JsRunnerOptions {
  /** Wall-clock limit of the code (default 2000 ms). */
  readonly timeLimitMs?: number;
  /** QuickJS heap cap (default 64 MiB). */
  readonly memoryLimitBytes?: number;
  /** QuickJS stack cap (default 512 KiB): deep recursion fails as a RangeError-like InternalError. */
  readonly stackSizeBytes?: number;
  /** Cap on stdout + stderr, and separately on the result text (default 64 KiB). */
  readonly maxOutputBytes?: number;
  /** Interpreters kept started ahead of calls (default 1). */
  readonly warm?: number;
  /** How long after the time limit the worker is terminated if the interrupt has not stopped the code. */
  readonly killGraceMs?: number;
  /**
   * Interpreters running at once (default: the cores this process may use). Further calls wait in
   * line before their time limit starts, so a burst of short programs on a busy machine queues
   * instead of being killed at a wall-clock limit it spent waiting for a core.
   */
  readonly maxConcurrent?: number;
}

interface WorkerReply {
  readonly type: "result";
  readonly ok: boolean;
  readonly result: string | null;
  readonly error: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly resultTruncated: boolean;
  readonly limit: "time" | "memory" | "output" | null;
  readonly durationMs: number;
}

const WORKER_URL = packageFile("./runners/quickjs.worker.mjs");

function startWorker(): Promise<Worker> {
  return new Promise((resolve, reject) => {
    // empty env and a small V8 heap: the worker itself holds nothing worth reaching
    const w = new Worker(WORKER_URL, {
      env: {},
      // a plain .mjs entry: no loader hooks (tsx, vitest) inherited from the host process
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    });
    const onMessage = (m: { type?: string }): void => {
      if (m.type !== "ready") return;
      w.off("message", onMessage);
      w.off("error", onError);
      w.unref();
      resolve(w);
    };
    const onError = (err: Error): void =>
      reject(new AgentmeshError("sandbox_unavailable", `QuickJS did not start: ${err.message}`, { cause: err }));
    w.on("message", onMessage);
    w.once("error", onError);
  });
}

class JsRunnerImpl implements CodeRunner {
  readonly language = "javascript" as const;
  readonly #o: Required<Omit<JsRunnerOptions, "warm" | "maxConcurrent">>;
  readonly #pool;
  readonly #slots;

  constructor(opts: JsRunnerOptions) {
    this.#o = {
      timeLimitMs: opts.timeLimitMs ?? 2000,
      memoryLimitBytes: opts.memoryLimitBytes ?? 64 * 1024 * 1024,
      stackSizeBytes: opts.stackSizeBytes ?? 512 * 1024,
      maxOutputBytes: opts.maxOutputBytes ?? 64 * 1024,
      killGraceMs: opts.killGraceMs ?? 100,
    };
    this.#slots = createSlots(opts.maxConcurrent ?? availableParallelism());
    this.#pool = createWarmPool<Worker>({
      size: opts.warm ?? 1,
      start: startWorker,
      dispose: (w) => void w.terminate(),
    });
    // start the first interpreter now so the first call does not pay for it (the worker is unref'd)
    this.#pool.prime();
  }

  async status(): Promise<SandboxStatus> {
    return {
      available: true,
      detail: "QuickJS compiled to WASM, one fresh interpreter per call in a worker thread; no host objects",
    };
  }

  async run(code: string, opts: RunOptions = {}): Promise<CodeRunResult> {
    const slot: Slot = await this.#slots.acquire(opts.signal);
    try {
      return await this.#runInWorker(code, opts);
    } finally {
      slot.release();
    }
  }

  async #runInWorker(code: string, opts: RunOptions): Promise<CodeRunResult> {
    const w = await this.#pool.take(opts.signal);
    const o = this.#o;
    let started = performance.now();
    try {
      const reply = await new Promise<WorkerReply>((resolve, reject) => {
        const hardKill = setTimeout(() => {
          reject(
            new AgentmeshError("timeout", `code ran past its ${o.timeLimitMs} ms limit and was killed`, {
              retryable: false,
            }),
          );
        }, o.timeLimitMs + o.killGraceMs);
        const done = (): void => {
          clearTimeout(hardKill);
          opts.signal?.removeEventListener("abort", onAbort);
        };
        const onAbort = (): void => {
          done();
          reject(opts.signal?.reason as Error);
        };
        opts.signal?.addEventListener("abort", onAbort, { once: true });
        w.once("message", (m: WorkerReply) => {
          done();
          resolve(m);
        });
        w.once("error", (err: Error) => {
          done();
          const oom = (err as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY";
          reject(
            oom
              ? new AgentmeshError("resource_exhausted", "code ran out of memory")
              : new AgentmeshError("tool_error", `QuickJS worker failed: ${err.message}`, { retryable: false }),
          );
        });
        w.ref();
        started = performance.now();
        opts.onStart?.();
        w.postMessage({
          code,
          timeLimitMs: o.timeLimitMs,
          memoryLimitBytes: o.memoryLimitBytes,
          stackSizeBytes: o.stackSizeBytes,
          maxOutputBytes: o.maxOutputBytes,
        });
      });
      const elapsed = Math.round(performance.now() - started);
      switch (reply.limit) {
        case "time":
          throw new AgentmeshError(
            "timeout",
            `code ran past its ${o.timeLimitMs} ms limit and was interrupted after ${elapsed} ms`,
            { retryable: false },
          );
        case "memory":
          throw new AgentmeshError("resource_exhausted", `code went over its ${o.memoryLimitBytes} byte memory limit`);
        case "output":
          throw new AgentmeshError("resource_exhausted", `code printed more than ${o.maxOutputBytes} bytes`);
        case null:
          break;
      }
      return {
        ok: reply.ok,
        result: reply.result,
        error: reply.error,
        stdout: reply.stdout,
        stderr: reply.stderr,
        truncated: reply.resultTruncated,
        durationMs: Math.round(reply.durationMs),
      };
    } finally {
      // single use: whatever the code did to its interpreter dies with this worker
      void w.terminate();
    }
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }
}

/** Creates the JavaScript runner: QuickJS (WASM) in a worker thread, killed at its deadline. */
export function createJsRunner(opts: JsRunnerOptions = {}): CodeRunner {
  return new JsRunnerImpl(opts);
}
