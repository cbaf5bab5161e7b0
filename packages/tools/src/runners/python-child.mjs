// Runs INSIDE the Python sandbox (bubblewrap + seccomp + Node's permission model; see
// run-python.ts). Modes: `probe` (the sandbox starts at all), `snapshot` (write a memory snapshot
// of a freshly started interpreter to /out, no user code involved), `run` (start, say ready, run
// ONE piece of code read from stdin, answer on stdout, exit). Plain JS: no TypeScript loader in
// the sandbox.
//
// Everything this process prints is hostile to the parent: guest code that reached JS could write
// to fd 1 itself. The answer therefore carries an HMAC-SHA256 under a key the parent sends with the
// code; the key lives only in a closure here and never enters Python's memory. The MAC is computed
// by our own SHA-256 over typed arrays, with every primitive it uses captured now, before any
// guest code runs, so a guest that patched prototypes or globals cannot learn the key or alter
// the line the runner signs.
import { readFileSync, writeFileSync, writeSync, constants as fsConstants } from "node:fs";
import { constants as osConstants } from "node:os";

const U8 = Uint8Array;
const U32 = Uint32Array;
const stringify = JSON.stringify;
const parseJson = JSON.parse;
const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt);
const writeOut = writeSync;
const exitNow = process.exit.bind(process);
const stdin = process.stdin;
const HEX = "0123456789abcdef";
const H0 = new U32([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const K = new U32([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

// UTF-8 of a well-formed string (JSON.stringify escapes lone surrogates). No destructuring or
// other iteration anywhere below: Array.prototype[Symbol.iterator] is the guest's to patch.
function utf8(s) {
  const n = s.length;
  const out = new U8(n * 3 + 1);
  let j = 0;
  for (let i = 0; i < n; i++) {
    let c = charCodeAt(s, i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < n) {
      const d = charCodeAt(s, i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) out[j++] = c;
    else if (c < 0x800) {
      out[j++] = 0xc0 | (c >> 6);
      out[j++] = 0x80 | (c & 63);
    } else if (c < 0x10000) {
      out[j++] = 0xe0 | (c >> 12);
      out[j++] = 0x80 | ((c >> 6) & 63);
      out[j++] = 0x80 | (c & 63);
    } else {
      out[j++] = 0xf0 | (c >> 18);
      out[j++] = 0x80 | ((c >> 12) & 63);
      out[j++] = 0x80 | ((c >> 6) & 63);
      out[j++] = 0x80 | (c & 63);
    }
  }
  return { bytes: out, len: j };
}

// SHA-256 of `len` bytes of `msg` into a 32-byte array (FIPS 180-4).
function sha256(msg, len) {
  const total = (((len + 9 + 63) / 64) | 0) * 64;
  const m = new U8(total);
  for (let i = 0; i < len; i++) m[i] = msg[i];
  m[len] = 0x80;
  const bits = len * 8;
  m[total - 4] = (bits >>> 24) & 255;
  m[total - 3] = (bits >>> 16) & 255;
  m[total - 2] = (bits >>> 8) & 255;
  m[total - 1] = bits & 255;
  m[total - 5] = (bits / 0x100000000) & 255;
  const h = new U32(8);
  for (let i = 0; i < 8; i++) h[i] = H0[i];
  const w = new U32(64);
  for (let off = 0; off < total; off += 64) {
    for (let t = 0; t < 16; t++)
      w[t] = (m[off + 4 * t] << 24) | (m[off + 4 * t + 1] << 16) | (m[off + 4 * t + 2] << 8) | m[off + 4 * t + 3];
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15];
      const b = w[t - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    let a = h[0],
      b = h[1],
      c = h[2],
      d = h[3],
      e = h[4],
      f = h[5],
      g = h[6],
      k = h[7];
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (k + S1 + ((e & f) ^ (~e & g)) + K[t] + w[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
  }
  const out = new U8(32);
  for (let i = 0; i < 8; i++) {
    out[4 * i] = h[i] >>> 24;
    out[4 * i + 1] = (h[i] >>> 16) & 255;
    out[4 * i + 2] = (h[i] >>> 8) & 255;
    out[4 * i + 3] = h[i] & 255;
  }
  return out;
}

// HMAC-SHA256 (RFC 2104) of a string under a 32-byte key, as hex.
function hmacHex(key, text) {
  const u = utf8(text);
  const msg = u.bytes;
  const len = u.len;
  const inner = new U8(64 + len);
  const outer = new U8(96);
  for (let i = 0; i < 64; i++) {
    const kb = i < 32 ? key[i] : 0;
    inner[i] = kb ^ 0x36;
    outer[i] = kb ^ 0x5c;
  }
  for (let i = 0; i < len; i++) inner[64 + i] = msg[i];
  const ih = sha256(inner, 64 + len);
  for (let i = 0; i < 32; i++) outer[64 + i] = ih[i];
  const mac = sha256(outer, 96);
  let hex = "";
  for (let i = 0; i < 32; i++) hex += HEX[mac[i] >> 4] + HEX[mac[i] & 15];
  return hex;
}

function keyFromHex(hex) {
  const key = new U8(32);
  for (let i = 0; i < 32; i++) key[i] = (parseHexDigit(hex, 2 * i) << 4) | parseHexDigit(hex, 2 * i + 1);
  return key;
}
function parseHexDigit(s, i) {
  const c = charCodeAt(s, i);
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  throw new Error("bad key");
}

const [mode, hardening] = process.argv.slice(2);
const harden = hardening === "harden";
// Lines before the code arrives (probe, ready) are sent before any guest code exists.
const send = (msg) => writeOut(1, `${stringify(msg)}\n`);

if (mode === "probe") {
  send({ type: "probe", node: process.version, permission: typeof process.permission?.has === "function" });
  exitNow(0);
}

// Node's permission model makes process.binding throw; Pyodide's NODEFS only reads the fs
// constants through it.
process.binding = (name) => {
  if (name === "constants") return { fs: fsConstants, os: osConstants };
  throw new Error(`process.binding(${name}) is not available`);
};
// V8 flags are the runner's, not the guest's: `--allow-natives-syntax` and friends stay off.
const v8 = process.getBuiltinModule?.("v8");
if (v8) {
  Object.defineProperty(v8, "setFlagsFromString", {
    value: () => {
      throw new Error("V8 flags cannot be changed in the sandbox");
    },
    writable: false,
    configurable: false,
  });
}
const { loadPyodide } = await import("/sandbox/pyodide/pyodide.mjs");
const quiet = () => {};

if (mode === "snapshot") {
  const py = await loadPyodide({
    indexURL: "/sandbox/pyodide/",
    env: { HOME: "/home/pyodide" },
    stdout: quiet,
    stderr: quiet,
    _makeSnapshot: true,
  });
  writeFileSync("/out/snapshot.bin", py.makeMemorySnapshot());
  exitNow(0);
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
// `random` was seeded when the snapshot was made, so every interpreter started from it would
// draw the same numbers: it is reseeded from the OS for every call. (The str hash secret is
// frozen in the snapshot too and cannot change under a running interpreter: hash() order is the
// same across calls; it is not a secret anyone relies on here.)
py.runPython(`
def _make_runner():
    import ast, builtins, inspect, os, random
    async def run(src):
        random.seed(os.urandom(32))
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
// to the JS host, so `import js` fails instead of reaching a confined but real Node, and ctypes,
// which calls any function in the WASM table (emscripten_run_script evaluates JS). `_ctypes` is
// compiled in, so the builtin importer itself refuses it too.
if (harden) {
  py.runPython(`
def _deny_bridges():
    import sys, _imp
    deny = frozenset({"js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "micropip", "ctypes", "_ctypes"})
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
    create_builtin = _imp.create_builtin
    def guarded_create_builtin(spec):
        if str(getattr(spec, "name", "")).partition(".")[0] in deny:
            raise ImportError(f"module {spec.name!r} is not available in the sandbox")
        return create_builtin(spec)
    _imp.create_builtin = guarded_create_builtin
_deny_bridges()
del _deny_bridges
`);
}

// Warm up before saying ready: the first Python run after a start compiles WASM lazily and
// settles the heap, which would otherwise eat ~0.3-2 s of the caller's time limit.
await sandboxRun("x = [str(i) for i in range(200)]\n' '.join(x).split()[:1]");
for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));

// Third step of the interpreter layer: the host object goes from the global scope, so JS reached
// through some JsProxy left in Python's object graph finds no `process` (and, with code
// generation from strings off, cannot compile any either). Error.prepareStackTrace is pinned so
// that no stack frame hands out a sloppy function's `this` (the global).
if (harden) {
  delete globalThis.process;
  Object.defineProperty(Error, "prepareStackTrace", { value: undefined, writable: false, configurable: false });
}
send({ type: "ready" });

let input = "";
let taken = false;
stdin.setEncoding("utf8");
stdin.on("data", (chunk) => {
  if (taken) return;
  input += chunk;
  const nl = input.indexOf("\n");
  if (nl >= 0) {
    taken = true;
    stdin.pause();
    const { code, maxOutputBytes, key } = parseJson(input.slice(0, nl));
    input = "";
    void runOnce(code, maxOutputBytes, keyFromHex(key));
  }
});

async function runOnce(code, maxOutputBytes, key) {
  // The one line the parent accepts: `<hmac> <json>`. The message has no prototype, so no
  // toJSON planted on Object.prototype changes what is signed.
  const answer = (fields) => {
    const msg = Object.create(null);
    msg.type = "result";
    for (const k of ["ok", "result", "error", "stdout", "stderr", "durationMs", "limit"])
      if (k in fields) msg[k] = fields[k];
    const body = stringify(msg);
    writeOut(1, `${hmacHex(key, body)} ${body}\n`);
    exitNow(0);
  };
  const chunks = { stdout: [], stderr: [] };
  let bytes = 0;
  const sink = (stream) => ({
    write(buf) {
      bytes += buf.length;
      if (bytes > maxOutputBytes) {
        // stop at once: a flood would otherwise run on until the deadline
        answer({ limit: "output" });
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
  answer({
    ok,
    result,
    error,
    stdout: text("stdout"),
    stderr: text("stderr"),
    durationMs,
    limit: memory ? "memory" : null,
  });
}
