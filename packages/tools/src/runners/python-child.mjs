// Runs INSIDE the Python sandbox (bubblewrap + Node's permission model; see run-python.ts).
// Modes: `probe` (the sandbox starts at all), `snapshot` (write a memory snapshot of a freshly
// started interpreter to /out, no user code involved), `run` (start, say ready, run ONE piece of
// code read from stdin, answer on stdout, exit). Plain JS: no TypeScript loader in the sandbox.
import { readFileSync, writeFileSync, writeSync, constants as fsConstants } from "node:fs";
import { constants as osConstants } from "node:os";

const [mode, hardening] = process.argv.slice(2);
const send = (msg) => writeSync(1, `${JSON.stringify(msg)}\n`);

if (mode === "probe") {
  send({ type: "probe", node: process.version, permission: typeof process.permission?.has === "function" });
  process.exit(0);
}

// Node's permission model makes process.binding throw; Pyodide's NODEFS only reads the fs
// constants through it.
process.binding = (name) => {
  if (name === "constants") return { fs: fsConstants, os: osConstants };
  throw new Error(`process.binding(${name}) is not available`);
};
const { loadPyodide } = await import("/sandbox/pyodide/pyodide.mjs");
const quiet = () => {};

if (mode === "snapshot") {
  const py = await loadPyodide({ indexURL: "/sandbox/pyodide/", env: { HOME: "/home/pyodide" }, stdout: quiet, stderr: quiet, _makeSnapshot: true });
  writeFileSync("/out/snapshot.bin", py.makeMemorySnapshot());
  process.exit(0);
}

let snapshot;
try {
  snapshot = readFileSync("/sandbox/snapshot.bin");
} catch {
  // no snapshot: a cold start, slower but the same interpreter
}
const py = await loadPyodide({
  indexURL: "/sandbox/pyodide/",
  env: { HOME: "/home/pyodide" },
  stdout: quiet,
  stderr: quiet,
  ...(snapshot ? { _loadSnapshot: snapshot } : {}),
});

// Runs the code as a module body and returns repr() of a trailing expression, like a REPL line.
py.runPython(`
def _make_runner():
    import ast, builtins, inspect
    async def run(src):
        g = {"__name__": "__main__", "__builtins__": builtins}
        tree = ast.parse(src, "<sandbox>", "exec")
        last = ast.Expression(tree.body.pop().value) if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        r = eval(compile(tree, "<sandbox>", "exec", flags=flags), g)
        if inspect.iscoroutine(r):
            await r
        if last is None:
            return None
        r = eval(compile(last, "<sandbox>", "eval", flags=flags), g)
        if inspect.iscoroutine(r):
            r = await r
        return None if r is None else repr(r)
    return run
_sandbox_run = _make_runner()
`);
const sandboxRun = py.globals.get("_sandbox_run");
py.runPython("del _sandbox_run, _make_runner");

// Second layer only (the boundary is the OS sandbox): take away the modules that bridge Python
// to the JS host, so `import js` fails instead of reaching a confined but real Node.
if (hardening === "harden") {
  py.runPython(`
def _deny_bridges():
    import sys
    deny = frozenset({"js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "micropip"})
    class DenyBridge:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in deny:
                raise ImportError(f"module {name!r} is not available in the sandbox")
            return None
    sys.meta_path.insert(0, DenyBridge())
    for f in sys.meta_path:
        for name in ("js", "pyodide_js"):
            try:
                f.unregister_js_module(name)
            except Exception:
                pass
    for m in [m for m in sys.modules if m.partition(".")[0] in deny]:
        del sys.modules[m]
_deny_bridges()
del _deny_bridges
`);
}

// Warm up before saying ready: the first Python run after a start compiles WASM lazily and
// settles the heap, which would otherwise eat ~0.3-2 s of the caller's time limit.
await sandboxRun("x = [str(i) for i in range(200)]\n' '.join(x).split()[:1]");
for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));
send({ type: "ready" });

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  input += chunk;
  const nl = input.indexOf("\n");
  if (nl >= 0) {
    process.stdin.pause();
    void runOnce(JSON.parse(input.slice(0, nl)));
  }
});

async function runOnce({ code, maxOutputBytes }) {
  const chunks = { stdout: [], stderr: [] };
  let bytes = 0;
  const sink = (stream) => ({
    write(buf) {
      bytes += buf.length;
      if (bytes > maxOutputBytes) {
        // stop at once: a flood would otherwise run on until the deadline
        send({ type: "result", limit: "output" });
        process.exit(0);
      }
      chunks[stream].push(Buffer.from(buf));
      return buf.length;
    },
  });
  py.setStdout(sink("stdout"));
  py.setStderr(sink("stderr"));
  py.setStdin({ error: true });
  const started = performance.now();
  let ok = true;
  let result = null;
  let error = null;
  try {
    const r = await sandboxRun(code);
    // one character over the cap is enough for the parent to know it was cut
    result = typeof r === "string" ? r.slice(0, maxOutputBytes + 1) : null;
  } catch (err) {
    ok = false;
    error = String(err?.message ?? err).slice(-4000);
  }
  const durationMs = performance.now() - started;
  const text = (s) => Buffer.concat(chunks[s]).toString("utf8");
  const memory = !ok && /\bMemoryError\b|out of memory|could not allocate/i.test(error.slice(-400));
  send({ type: "result", ok, result, error, stdout: text("stdout"), stderr: text("stderr"), durationMs, limit: memory ? "memory" : null });
  process.exit(0);
}
