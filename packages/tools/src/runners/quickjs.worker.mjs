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

function run({ code, timeLimitMs, memoryLimitBytes, stackSizeBytes, maxOutputBytes }) {
  const started = performance.now();
  const deadline = Date.now() + timeLimitMs;
  const out = [[], []];
  let outBytes = 0;
  let overflow = false;

  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(memoryLimitBytes);
  runtime.setMaxStackSize(stackSizeBytes);
  runtime.setInterruptHandler(() => overflow || Date.now() > deadline);
  const vm = runtime.newContext();

  const emit = vm.newFunction("emit", (streamH, textH) => {
    if (overflow) return;
    const stream = vm.typeof(streamH) === "number" && vm.getNumber(streamH) === 1 ? 1 : 0;
    const text = vm.typeof(textH) === "string" ? vm.getString(textH) : "";
    const bytes = Buffer.byteLength(text) + 1;
    if (outBytes + bytes > maxOutputBytes) {
      overflow = true;
      return;
    }
    outBytes += bytes;
    out[stream].push(text);
  });
  const shim = vm.unwrapResult(vm.evalCode(CONSOLE_SHIM, "console-shim.js"));
  vm.unwrapResult(vm.callFunction(shim, vm.undefined, emit)).dispose();
  shim.dispose();
  emit.dispose();

  const finish = (ok, value, error, resultTruncated = false) => {
    // past the deadline is a timeout even if the code's last act (a getter run while the result
    // was serialised) was interrupted and swallowed
    const timedOut = Date.now() > deadline;
    const memory = typeof error === "string" && /out of memory/i.test(error);
    return {
      type: "result",
      ok,
      result: value,
      error: error === null || error === undefined ? null : String(error).slice(0, 4000),
      stdout: out[0].join("\n"),
      stderr: out[1].join("\n"),
      resultTruncated,
      limit: overflow ? "output" : memory ? "memory" : timedOut ? "time" : null,
      durationMs: performance.now() - started,
    };
  };
  const describe = (handle) => {
    const d = vm.dump(handle);
    if (d && typeof d === "object" && "message" in d) return `${d.name ?? "Error"}: ${d.message}`;
    return String(d);
  };

  const evaluated = vm.evalCode(code, "main.js");
  if (evaluated.error) {
    const msg = describe(evaluated.error);
    evaluated.error.dispose();
    return finish(false, null, msg);
  }
  let handle = evaluated.value;
  // an async result: run the guest's job queue (no timers exist, so it drains or loops)
  if (vm.typeof(handle) === "object" && vm.getPromiseState(handle).type === "pending") {
    while (vm.getPromiseState(handle).type === "pending") {
      if (Date.now() > deadline || overflow) return finish(false, null, "InternalError: interrupted");
      const jobs = runtime.executePendingJobs(64);
      if (jobs.error) {
        const msg = describe(jobs.error);
        jobs.error.dispose();
        return finish(false, null, msg);
      }
      if (jobs.value === 0 && vm.getPromiseState(handle).type === "pending")
        return finish(false, null, "the result promise never settles");
    }
  }
  if (vm.typeof(handle) === "object") {
    const state = vm.getPromiseState(handle);
    if (state.type === "rejected") return finish(false, null, describe(state.error));
    if (state.type === "fulfilled" && !state.notAPromise) handle = state.value;
  }
  let result;
  try {
    const t = vm.typeof(handle);
    result =
      t === "undefined"
        ? null
        : t === "string"
          ? vm.getString(handle)
          : (JSON.stringify(vm.dump(handle)) ?? String(vm.dump(handle)));
  } catch (err) {
    return finish(false, null, String(err?.message ?? err));
  }
  if (result !== null && result.length > maxOutputBytes)
    return finish(true, result.slice(0, maxOutputBytes), null, true);
  return finish(true, result, null);
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
