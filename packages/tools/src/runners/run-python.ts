import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentmeshError } from "@agentmesh/contracts";
import { z } from "zod";
import { createWarmPool } from "../warm-pool.js";
import { ensureSnapshot } from "./snapshot.js";
import { deniedSyscallCount, seccompArch } from "./seccomp.js";
import {
  findBinary,
  killSandbox,
  SANDBOX_NPROC,
  spawnSandbox,
  type SandboxPaths,
  type SandboxSpawn,
} from "./sandbox-process.js";
import { createSlots, defaultSandboxSlots, type Slot } from "./slots.js";
import type { CodeRunner, CodeRunResult, RunOptions, SandboxStatus } from "./types.js";
import { packageFile } from "../files.js";

/** Limits and locations of the Python runner. */
export interface PythonRunnerOptions {
  /** Wall-clock limit of the code, start-up excluded (default 5000 ms). */
  readonly timeLimitMs?: number;
  /**
   * RLIMIT_AS of the sandboxed process (default 1792 MiB: Node 24 reserves ~1.3 GiB of address
   * space at start, ~0.6 GiB more than Node 20, and Pyodide needs room on top of that).
   */
  readonly addressSpaceBytes?: number;
  /** Cap on stdout + stderr and on the result text (default 64 KiB). */
  readonly maxOutputBytes?: number;
  /** Interpreters kept started ahead of calls (default 1). */
  readonly warm?: number;
  /**
   * Sandboxed processes alive at once, warm ones included (default: as many RLIMIT_AS-sized
   * processes as memory holds, 1 to 4). Calls beyond it queue; their signal still ends the wait.
   */
  readonly maxProcesses?: number;
  /** When the host runs as root, sandbox number i runs as host uid `sandboxUidBase + i` (default 2_000_000_000). */
  readonly sandboxUidBase?: number;
  /** Layer 2: make `js` / `pyodide_js` unimportable (default true). Off only to test the OS boundary alone. */
  readonly hardenInterpreter?: boolean;
  /** Start interpreters from a memory snapshot (~1 s instead of ~3-4 s; default true). */
  readonly useSnapshot?: boolean;
  readonly startupTimeoutMs?: number;
  /** Where the snapshot is cached, in a private (0700) directory made inside (default the OS temp dir). */
  readonly scratchDir?: string;
  readonly bwrapPath?: string;
  readonly prlimitPath?: string;
  readonly setprivPath?: string;
  readonly nodePath?: string;
  readonly pyodideDir?: string;
}

interface Lines {
  next(): Promise<IteratorResult<string>>;
  /** True once the child sent more than it may and was killed for it. */
  overflowed(): boolean;
}

interface Ready {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: Lines;
  readonly stderr: () => string;
}

// What the child may answer. Anything else, or a line without the run's MAC, is a protocol
// violation: guest code that reached the child's JS could have written it.
const ChildResult = z
  .object({
    type: z.literal("result"),
    ok: z.boolean().optional(),
    result: z.string().nullable().optional(),
    error: z.string().nullable().optional(),
    stdout: z.string().optional(),
    stderr: z.string().optional(),
    durationMs: z.number().finite().nonnegative().optional(),
    limit: z.enum(["memory", "output"]).nullable().optional(),
  })
  .strict();
type ChildResult = z.infer<typeof ChildResult>;

const MAX_ERROR_CHARS = 4000;

function protocolViolation(why: string): AgentmeshError {
  return new AgentmeshError(
    "tool_error",
    `the Python sandbox broke its result protocol (${why}); nothing it sent was used`,
    { retryable: false },
  );
}

/**
 * Checks the child's answer line `<hex HMAC-SHA256 under key> <json>` and its content against
 * the caps, so that neither a forged line nor an oversized one gets through.
 */
function readAnswer(line: string, key: Buffer, maxOutputBytes: number): ChildResult {
  const sp = line.indexOf(" ");
  const mac = sp === 64 ? Buffer.from(line.slice(0, 64), "hex") : Buffer.alloc(0);
  if (mac.length !== 32) throw protocolViolation("the answer carries no MAC");
  const body = line.slice(65);
  if (!timingSafeEqual(mac, createHmac("sha256", key).update(body, "utf8").digest()))
    throw protocolViolation("the answer's MAC is wrong");
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw protocolViolation("the answer is not JSON");
  }
  const parsed = ChildResult.safeParse(json);
  if (!parsed.success) throw protocolViolation("the answer does not have the expected shape");
  const r = parsed.data;
  if ((r.result?.length ?? 0) > maxOutputBytes + 1) throw protocolViolation("the result is over the cap");
  if ((r.error?.length ?? 0) > MAX_ERROR_CHARS) throw protocolViolation("the error text is over the cap");
  // the child caps the bytes written; decoded, each byte is at most one UTF-16 unit (a bad byte
  // becomes one U+FFFD), so the lengths bound it without penalising invalid UTF-8
  if ((r.stdout?.length ?? 0) + (r.stderr?.length ?? 0) > maxOutputBytes)
    throw protocolViolation("the output is over the cap");
  return r;
}

const CHILD_SCRIPT = fileURLToPath(packageFile("./runners/python-child.mjs"));

function defaultPyodideDir(): string {
  return dirname(createRequire(import.meta.url).resolve("pyodide/package.json"));
}

/** Reads newline-separated messages from a child's stdout, capping what it may send in all. */
function lineReader(child: ChildProcessWithoutNullStreams, maxBytes: number): Lines {
  const queue: string[] = [];
  const waiters: Array<(r: IteratorResult<string>) => void> = [];
  let buf = "";
  let total = 0;
  let ended = false;
  const push = (line: string): void => {
    const w = waiters.shift();
    if (w) w({ value: line, done: false });
    else queue.push(line);
  };
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    if (total > maxBytes) return;
    total += chunk.length;
    if (total > maxBytes) {
      killSandbox(child);
      return;
    }
    buf += chunk;
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  child.stdout.on("close", () => {
    ended = true;
    for (const w of waiters.splice(0)) w({ value: undefined, done: true });
  });
  return {
    overflowed: () => total > maxBytes,
    next: () =>
      new Promise((resolve) => {
        const line = queue.shift();
        if (line !== undefined) resolve({ value: line, done: false });
        else if (ended) resolve({ value: undefined, done: true });
        else waiters.push(resolve);
      }),
  };
}

function collectStderr(child: ChildProcessWithoutNullStreams, max = 8192): () => string {
  let text = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (c: string) => {
    if (text.length < max) text += c.slice(0, max - text.length);
  });
  return () => text.trim();
}

function setRef(child: ChildProcessWithoutNullStreams, on: boolean): void {
  for (const h of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?: () => void; unref?: () => void }>) {
    if (on) h.ref?.();
    else h.unref?.();
  }
}

class PythonRunnerImpl implements CodeRunner {
  readonly language = "python" as const;
  readonly #o;
  readonly #paths: SandboxPaths | null;
  readonly #missing: string | null;
  readonly #pool;
  readonly #slots;
  readonly #uidBase: number;
  #status: Promise<SandboxStatus> | undefined;
  #snapshot: Promise<string | null> | undefined;

  constructor(opts: PythonRunnerOptions) {
    this.#o = {
      timeLimitMs: opts.timeLimitMs ?? 5000,
      addressSpaceBytes: opts.addressSpaceBytes ?? 1792 * 1024 * 1024,
      maxOutputBytes: opts.maxOutputBytes ?? 64 * 1024,
      harden: opts.hardenInterpreter ?? true,
      useSnapshot: opts.useSnapshot ?? true,
      startupTimeoutMs: opts.startupTimeoutMs ?? 30_000,
      scratchDir: opts.scratchDir ?? tmpdir(),
    };
    const bwrap = opts.bwrapPath ?? findBinary("bwrap");
    const prlimit = opts.prlimitPath ?? findBinary("prlimit");
    const setpriv = opts.setprivPath ?? findBinary("setpriv");
    const root = process.getuid?.() === 0;
    this.#missing = !bwrap
      ? "bubblewrap (bwrap) is not installed"
      : !prlimit
        ? "prlimit (util-linux) is not installed"
        : root && !setpriv
          ? "setpriv (util-linux) is not installed; as root the sandbox needs it to drop to an unprivileged uid"
          : !seccompArch()
            ? `there is no seccomp filter for the ${process.arch} architecture`
            : null;
    this.#paths =
      bwrap && prlimit && !this.#missing
        ? {
            bwrap,
            prlimit,
            setpriv,
            node: opts.nodePath ?? process.execPath,
            pyodideDir: opts.pyodideDir ?? defaultPyodideDir(),
            childScript: CHILD_SCRIPT,
          }
        : null;
    this.#slots = createSlots(opts.maxProcesses ?? defaultSandboxSlots(this.#o.addressSpaceBytes));
    this.#uidBase = opts.sandboxUidBase ?? 2_000_000_000;
    this.#pool = createWarmPool<Ready>({
      size: opts.warm ?? 1,
      start: () => this.#start(),
      dispose: (r) => killSandbox(r.child),
    });
  }

  status(): Promise<SandboxStatus> {
    this.#status ??= this.#probe();
    return this.#status;
  }

  async run(code: string, opts: RunOptions = {}): Promise<CodeRunResult> {
    const st = await this.status();
    if (!st.available) throw new AgentmeshError("sandbox_unavailable", `Python was not run: ${st.detail}`);
    const ready = await this.#pool.take(opts.signal);
    const o = this.#o;
    const { child } = ready;
    setRef(child, true);
    let killedAtDeadline = false;
    const timer = setTimeout(() => {
      killedAtDeadline = true;
      killSandbox(child);
    }, o.timeLimitMs);
    const onAbort = (): void => killSandbox(child);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const started = performance.now();
    opts.onStart?.();
    try {
      // a fresh key per run: only the runner's code in the child learns it, never the guest's
      const key = randomBytes(32);
      child.stdin.end(`${JSON.stringify({ code, maxOutputBytes: o.maxOutputBytes, key: key.toString("hex") })}\n`);
      const line = await ready.lines.next();
      const elapsed = Math.round(performance.now() - started);
      opts.signal?.throwIfAborted();
      if (killedAtDeadline)
        throw new AgentmeshError(
          "timeout",
          `code ran past its ${o.timeLimitMs} ms limit and was killed after ${elapsed} ms`,
          { retryable: false },
        );
      if (ready.lines.overflowed())
        throw new AgentmeshError("resource_exhausted", "the Python process wrote more output than allowed");
      if (line.done) {
        const why = ready.stderr();
        if (/memory|allocat/i.test(why))
          throw new AgentmeshError("resource_exhausted", "the Python process ran out of memory");
        throw new AgentmeshError(
          "tool_error",
          `the Python process ended without an answer: ${why.slice(-500) || "no output"}`,
          { retryable: false },
        );
      }
      const r = readAnswer(line.value, key, o.maxOutputBytes);
      if (r.limit === "output")
        throw new AgentmeshError("resource_exhausted", `code printed more than ${o.maxOutputBytes} bytes`);
      if (r.limit === "memory")
        throw new AgentmeshError("resource_exhausted", `code went over the ${o.addressSpaceBytes} byte memory limit`);
      const result = r.result ?? null;
      const truncated = result !== null && result.length > o.maxOutputBytes;
      return {
        ok: r.ok === true,
        result: truncated ? result.slice(0, o.maxOutputBytes) : result,
        error: r.error ? r.error.slice(-2000) : null,
        stdout: r.stdout ?? "",
        stderr: r.stderr ?? "",
        truncated,
        durationMs: Math.round(Math.min(r.durationMs ?? elapsed, elapsed)),
      };
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      // single use: the process and everything the code left in it are gone
      killSandbox(child);
    }
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  // Every sandboxed process holds a slot from before it starts until it has exited, so no more
  // than maxProcesses exist at once; the slot number picks its host uid.
  async #spawn(
    s: Omit<SandboxSpawn, "harden" | "addressSpaceBytes" | "cpuSeconds" | "hostUid">,
    signal?: AbortSignal,
  ): Promise<ChildProcessWithoutNullStreams> {
    const slot: Slot = await this.#slots.acquire(signal);
    const paths = this.#paths as SandboxPaths;
    const cpuSeconds = Math.ceil(this.#o.timeLimitMs / 1000) + 15;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawnSandbox(paths, {
        ...s,
        harden: this.#o.harden,
        addressSpaceBytes: this.#o.addressSpaceBytes,
        cpuSeconds,
        hostUid: this.#uidBase + slot.slot,
      });
    } catch (e) {
      slot.release();
      throw e;
    }
    if (child.pid === undefined) slot.release();
    else child.once("close", () => slot.release());
    return child;
  }

  // The sandbox is available when a process started under every wall (prlimit, bwrap, the
  // permission model) can answer. If it cannot, Python is never run at all.
  async #probe(): Promise<SandboxStatus> {
    if (!this.#paths) return { available: false, detail: this.#missing ?? "no sandbox" };
    if (!existsSync(join(this.#paths.pyodideDir, "pyodide.mjs")))
      return { available: false, detail: `no Pyodide at ${this.#paths.pyodideDir}` };
    let child: ChildProcessWithoutNullStreams;
    try {
      child = await this.#spawn({ mode: "probe" });
    } catch (e) {
      return { available: false, detail: `the sandbox did not start: ${(e as Error).message}` };
    }
    const err = collectStderr(child);
    const lines = lineReader(child, 4096);
    const timer = setTimeout(() => killSandbox(child), 10_000);
    try {
      const line = await lines.next();
      if (line.done)
        return { available: false, detail: `the sandbox did not start: ${err().slice(-500) || "no output"}` };
      const p = JSON.parse(line.value) as { permission?: boolean };
      if (!p.permission) return { available: false, detail: "Node's permission model is not available in the sandbox" };
      const uid = process.getuid?.() === 0 ? `, as host uid ${this.#uidBase}+ with RLIMIT_NPROC ${SANDBOX_NPROC}` : "";
      return {
        available: true,
        detail: `Pyodide in a child process under bubblewrap (new user, mount, pid, net namespaces; a size-capped tmpfs) with a seccomp filter (${deniedSyscallCount()} syscalls denied, namespaces in clone, sockets but AF_UNIX), Node's permission model without code generation from strings, RLIMIT_AS, RLIMIT_FSIZE${uid} and a kill at the deadline`,
      };
    } catch (e) {
      return { available: false, detail: `the sandbox did not start: ${(e as Error).message}` };
    } finally {
      clearTimeout(timer);
      killSandbox(child);
    }
  }

  #makeSnapshot(): Promise<string | null> {
    this.#snapshot ??= this.#o.useSnapshot
      ? ensureSnapshot(
          this.#o.scratchDir,
          {
            nodeVersion: process.version,
            pyodideDir: (this.#paths as SandboxPaths).pyodideDir,
            childScript: CHILD_SCRIPT,
          },
          (outDir) => this.#spawn({ mode: "snapshot", outDir }),
          this.#o.startupTimeoutMs * 2,
        ).catch(() => null)
      : Promise.resolve(null);
    return this.#snapshot;
  }

  async #start(): Promise<Ready> {
    const snapshot = await this.#makeSnapshot();
    const child = await this.#spawn({ mode: "run", snapshot });
    const stderr = collectStderr(child);
    const lines = lineReader(child, this.#o.maxOutputBytes * 8 + 1024 * 1024);
    const timer = setTimeout(() => killSandbox(child), this.#o.startupTimeoutMs);
    try {
      const first = await lines.next();
      if (first.done || first.value !== '{"type":"ready"}') {
        killSandbox(child);
        throw new AgentmeshError(
          "sandbox_unavailable",
          `the Python sandbox did not start: ${stderr().slice(-500) || "no output"}`,
        );
      }
      // a warm process waiting for work must not keep the host process alive
      setRef(child, false);
      return { child, lines, stderr };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Creates the Python runner: Pyodide in a bubblewrap-confined child process, one per call. */
export function createPythonRunner(opts: PythonRunnerOptions = {}): CodeRunner {
  return new PythonRunnerImpl(opts);
}
