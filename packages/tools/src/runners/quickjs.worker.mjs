// Worker entry of the `run_js` runner: one QuickJS (WASM) interpreter for ONE call, then the
// parent terminates this worker. Plain JS so that it needs no TypeScript loader.
//
// The guest gets a fresh QuickJS runtime with no host objects at all: no process, require,
// import(), fetch, timers or fs. The only bridge is `console.*`, which hands the host one string
// and returns nothing. Limits: the QuickJS heap cap, its stack cap, an interrupt handler polled
// by the interpreter (deadline and output cap), and the parent's hard terminate() as backstop.
import { parentPort } from "node:worker_threads";
import { newQuickJSWASMModule, RELEASE_SYNC } from "quickjs-emscripten";

// A fresh WASM instance per worker (hence per call): not even the interpreter's linear memory
// is shared with an earlier call. (V8 caches the compiled code per process, so this is cheap.)
const QuickJS = await newQuickJSWASMModule(RELEASE_SYNC);

const CONSOLE_SHIM = `(function (emit) {
  const show = (v) => {
    if (typeof v === "string") return v;
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch { return String(v); }
  };
  const line = (stream) => (...args) => { emit(stream, args.map(show).join(" ")); };
  globalThis.console = { log: line(0), info: line(0), debug: line(0), warn: line(1), error: line(1) };
})`;

/**
 * A fresh runtime and context for one call: its limits set, the interrupt handler polling the
 * deadline and the output cap, and `console.*` bridged into `out` (stdout, stderr) under that cap.
 */
function newGuest({ timeLimitMs, memoryLimitBytes, stackSizeBytes, maxOutputBytes }) {
  const g = {
    started: performance.now(),
    deadline: Date.now() + timeLimitMs,
    out: [[], []],
    outBytes: 0,
    overflow: false,
  };
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(memoryLimitBytes);
  runtime.setMaxStackSize(stackSizeBytes);
  runtime.setInterruptHandler(() => g.overflow || Date.now() > g.deadline);
  const vm = runtime.newContext();

  const emit = vm.newFunction("emit", (streamH, textH) => {
    if (g.overflow) return;
    const stream = vm.typeof(streamH) === "number" && vm.getNumber(streamH) === 1 ? 1 : 0;
    const text = vm.typeof(textH) === "string" ? vm.getString(textH) : "";
    const bytes = Buffer.byteLength(text) + 1;
    if (g.outBytes + bytes > maxOutputBytes) {
      g.overflow = true;
      return;
    }
    g.outBytes += bytes;
    g.out[stream].push(text);
  });
  const shim = vm.unwrapResult(vm.evalCode(CONSOLE_SHIM, "console-shim.js"));
  vm.unwrapResult(vm.callFunction(shim, vm.undefined, emit)).dispose();
  shim.dispose();
  emit.dispose();
  return Object.assign(g, { runtime, vm });
}

/** The call's reply: its result or error, the console output, and which limit (if any) it hit. */
function finish(g, ok, value, error, resultTruncated = false) {
  // past the deadline is a timeout even if the code's last act (a getter run while the result
  // was serialised) was interrupted and swallowed
  const timedOut = Date.now() > g.deadline;
  const memory = typeof error === "string" && /out of memory/i.test(error);
  return {
    type: "result",
    ok,
    result: value,
    error: error === null || error === undefined ? null : String(error).slice(0, 4000),
    stdout: g.out[0].join("\n"),
    stderr: g.out[1].join("\n"),
    resultTruncated,
    limit: g.overflow ? "output" : memory ? "memory" : timedOut ? "time" : null,
    durationMs: performance.now() - g.started,
  };
}

/** A guest value (an error, most often) as one line of text. */
function describe(vm, handle) {
  const d = vm.dump(handle);
  if (d && typeof d === "object" && "message" in d) return `${d.name ?? "Error"}: ${d.message}`;
  return String(d);
}

function run(job) {
  const g = newGuest(job);
  const { vm } = g;
  const evaluated = vm.evalCode(job.code, "main.js");
  if (evaluated.error) {
    const msg = describe(vm, evaluated.error);
    evaluated.error.dispose();
    return finish(g, false, null, msg);
  }
  const settled = settle(g, evaluated.value);
  if ("error" in settled) return finish(g, false, null, settled.error);
  let result;
  try {
    const t = vm.typeof(settled.handle);
    result =
      t === "undefined"
        ? null
        : t === "string"
          ? vm.getString(settled.handle)
          : (JSON.stringify(vm.dump(settled.handle)) ?? String(vm.dump(settled.handle)));
  } catch (err) {
    return finish(g, false, null, String(err?.message ?? err));
  }
  if (result !== null && result.length > job.maxOutputBytes)
    return finish(g, true, result.slice(0, job.maxOutputBytes), null, true);
  return finish(g, true, result, null);
}

/**
 * The value the code ended with, a promise's once it settles: the guest's job queue is run until
 * then (no timers exist, so it drains or loops). `{ handle }`, or `{ error }` for a rejection, an
 * interrupt or a promise that can never settle.
 */
function settle(g, value) {
  const { vm, runtime } = g;
  let handle = value;
  if (vm.typeof(handle) === "object" && vm.getPromiseState(handle).type === "pending") {
    while (vm.getPromiseState(handle).type === "pending") {
      if (Date.now() > g.deadline || g.overflow) return { error: "InternalError: interrupted" };
      const jobs = runtime.executePendingJobs(64);
      if (jobs.error) {
        const msg = describe(vm, jobs.error);
        jobs.error.dispose();
        return { error: msg };
      }
      if (jobs.value === 0 && vm.getPromiseState(handle).type === "pending")
        return { error: "the result promise never settles" };
    }
  }
  if (vm.typeof(handle) === "object") {
    const state = vm.getPromiseState(handle);
    if (state.type === "rejected") return { error: describe(vm, state.error) };
    if (state.type === "fulfilled" && !state.notAPromise) handle = state.value;
  }
  return { handle };
}

parentPort.on("message", (job) => {
  const t0 = Date.now();
  let reply;
  try {
    reply = run(job);
  } catch (err) {
    // the interpreter itself failed (e.g. a guest getter looping while its error was read)
    const msg = String(err?.message ?? err).slice(0, 4000);
    const limit = /out of memory/i.test(msg) ? "memory" : Date.now() - t0 > job.timeLimitMs ? "time" : null;
    reply = {
      type: "result",
      ok: false,
      result: null,
      error: msg,
      stdout: "",
      stderr: "",
      resultTruncated: false,
      limit,
      durationMs: Date.now() - t0,
    };
  }
  parentPort.postMessage(reply);
});
parentPort.postMessage({ type: "ready" });
