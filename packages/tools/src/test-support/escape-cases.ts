// The sandbox escape cases run by src/sandbox-escape.test.ts (test-only; not shipped).
//
// Each case is code an attacker would try, the runner it goes to, and what containment looks
// like for it. On top of each case's own check, the suite checks every outcome for the canaries
// (a secret in a host file, a secret in the host env, the host's cwd), a loopback listener that
// must see no connection, and a host file that must never be written.
import { expect } from "vitest";
import type { CodeRunResult } from "../runners/types.js";

/** What a run came to: the code ran (maybe raising), or the runner refused / killed it. */
export type Outcome =
  | { readonly kind: "ran"; readonly r: CodeRunResult; readonly ms: number }
  | { readonly kind: "failed"; readonly code: string; readonly message: string; readonly ms: number };

/** Host facts the payloads aim at. */
export interface Targets {
  readonly canaryPath: string;
  readonly pwnedPath: string;
  readonly port: number;
  readonly hostCwd: string;
}

/** `js` QuickJS; `py` Pyodide with both walls; `py-open` the OS wall alone (`import js` allowed). */
export type Lang = "js" | "py" | "py-open";

/** One escape attempt. */
export interface EscapeCase {
  readonly name: string;
  readonly lang: Lang;
  readonly code: (t: Targets) => string;
  /** Written to dodge the seed's dangerous-pattern list; the suite checks that it does. */
  readonly evasive?: boolean;
  /** A runaway: must end as timeout / resource_exhausted within the limit + 20%. */
  readonly runaway?: boolean;
  readonly check: (o: Outcome, t: Targets) => void;
}

const text = (o: Outcome): string => (o.kind === "ran" ? `${o.r.result ?? ""}\n${o.r.error ?? ""}\n${o.r.stdout}\n${o.r.stderr}` : o.message);

/** The code ran and its last expression was exactly `v`. */
const value = (v: string | null) => (o: Outcome) => {
  expect(o.kind === "ran" && o.r.ok ? o.r.result : o).toEqual(v);
};
/** The code ran and raised an error matching `re`. */
const raised = (re: RegExp) => (o: Outcome) => {
  expect(o.kind === "ran" && !o.r.ok, text(o)).toBe(true);
  expect(text(o)).toMatch(re);
};
/** The runner refused or stopped it with one of these codes. */
const failed = (...codes: string[]) => (o: Outcome) => {
  expect(o.kind === "failed" ? o.code : `ran: ${text(o).slice(0, 300)}`).toSatisfy((c: string) => codes.includes(c));
};
/** Ran or failed, anything but a leak (the suite checks leaks for every case). */
const contained = () => () => undefined;
/** Whatever happened, `re` is not in what came back. */
const never = (re: RegExp) => (o: Outcome) => {
  expect(text(o)).not.toMatch(re);
};
const either = (...checks: Array<(o: Outcome) => void>) => (o: Outcome) => {
  const errors: unknown[] = [];
  for (const c of checks) {
    try {
      c(o);
      return;
    } catch (e) {
      errors.push(e);
    }
  }
  throw errors[0] as Error;
};
const killed = failed("timeout", "resource_exhausted");

const JS: EscapeCase[] = [
  { name: "host globals are absent", lang: "js", evasive: true, code: () => "[typeof process, typeof require, typeof module, typeof Buffer, typeof global, typeof fetch, typeof setTimeout, typeof setInterval, typeof XMLHttpRequest, typeof WebSocket, typeof WebAssembly].join()", check: value(Array(11).fill("undefined").join()) },
  { name: "this.constructor.constructor('return process')()", lang: "js", code: () => "this.constructor.constructor('return process')()", check: raised(/ReferenceError: .*process/) },
  { name: "constructor chain with a built name", lang: "js", evasive: true, code: () => "this.constructor.constructor('return pro' + 'cess')()", check: raised(/ReferenceError/) },
  { name: "Function('return this')() is the guest global", lang: "js", evasive: true, code: () => "const g = Function('return this')(); [typeof g['pro' + 'cess'], typeof g['req' + 'uire'], g === globalThis].join()", check: value("undefined,undefined,true") },
  { name: "unicode-escaped identifier", lang: "js", evasive: true, code: () => "typeof \\u0070rocess", check: value("undefined") },
  { name: "AsyncFunction constructor", lang: "js", evasive: true, code: () => "(async function () {}).constructor('return typeof globalThis.pro' + 'cess')()", check: value("undefined") },
  { name: "GeneratorFunction constructor", lang: "js", evasive: true, code: () => "Object.getPrototypeOf(function* () {}).constructor('yield typeof req' + 'uire')().next().value", check: value("undefined") },
  { name: "AsyncGeneratorFunction constructor", lang: "js", evasive: true, code: () => "(async () => { const G = Object.getPrototypeOf(async function* () {}).constructor; return (await G('yield typeof globalThis.Buf' + 'fer')().next()).value })()", check: value("undefined") },
  { name: "Promise.then's constructor", lang: "js", evasive: true, code: () => "Promise.resolve().then.constructor('return typeof pro' + 'cess')()", check: value("undefined") },
  { name: "thenable resolve function's constructor (vm2 CVE class)", lang: "js", evasive: true, code: () => "(async () => { let leaked; await { then(resolve) { leaked = resolve.constructor('return typeof pro' + 'cess')(); resolve(); } }; return leaked })()", check: value("undefined") },
  { name: "Promise species subclass", lang: "js", evasive: true, code: () => "class P extends Promise { static get [Symbol.species]() { return Promise } }; P.resolve(1).then((v) => v.constructor.constructor('return typeof pro' + 'cess')())", check: value("undefined") },
  { name: "Error.prepareStackTrace frames", lang: "js", evasive: true, code: () => "Error.prepareStackTrace = (e, frames) => frames.map((f) => typeof f?.getThis === 'function' ? typeof f.getThis()?.pro\\u0063ess : 'none'); const s = new Error('x').stack; JSON.stringify(s)", check: never(/object|node:|quickjs\.worker/) },
  { name: "stack traces name guest code only", lang: "js", evasive: true, code: () => "function f() { return new Error('x').stack } f()", check: never(/node:|\/work\/|worker|\.mjs/) },
  { name: "Proxy traps while the host formats console output", lang: "js", evasive: true, code: () => "console.log(new Proxy({}, { ownKeys() { throw new Error('trap') }, get() { throw new Error('trap') } })); 'after'", check: either(value("after"), raised(/trap|TypeError/)) },
  { name: "Proxy around the console bridge", lang: "js", evasive: true, code: () => "const p = new Proxy(console.log, { apply(t, self, args) { return typeof self } }); p.call({}, 1)", check: value("object") },
  { name: "console bridge's constructor", lang: "js", evasive: true, code: () => "console.log.constructor('return typeof pro' + 'cess')()", check: value("undefined") },
  { name: "console has only the shimmed methods", lang: "js", evasive: true, code: () => "Object.getOwnPropertyNames(console).join()", check: value("log,info,debug,warn,error") },
  { name: "eval built from strings is guest eval", lang: "js", evasive: true, code: () => "globalThis['ev' + 'al']('typeof pro' + 'cess')", check: value("undefined") },
  { name: "no host names among the global's keys", lang: "js", evasive: true, code: () => "Reflect.ownKeys(globalThis).map(String).filter((k) => /^(process|require|Buffer|fetch|module|exports|std|os|scriptArgs|setTimeout)$/.test(k)).length", check: value("0") },
  { name: "caller chain ends in the guest", lang: "js", evasive: true, code: () => "(function f() { return f.caller == null ? 'no caller' : typeof f.caller })()", check: value("no caller") },
  { name: "dynamic import of a Node module", lang: "js", code: () => "import('node:child_process').then(() => 'loaded')", check: raised(/could not load module|not defined|Error/) },
  { name: "dynamic import of quickjs-libc's os module", lang: "js", code: () => "import('os').then((m) => typeof m.exec)", check: raised(/could not load module|Error/) },
  { name: "static import is a syntax error in a script", lang: "js", code: () => "import * as fs from 'fs'; fs.readFileSync('/etc/passwd')", check: raised(/SyntaxError|could not load module/) },
  { name: "SharedArrayBuffer + Atomics.wait cannot hang the host", lang: "js", evasive: true, code: () => "typeof SharedArrayBuffer === 'function' && typeof Atomics === 'object' ? Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000) : 'no shared memory'", check: either(value("no shared memory"), raised(/Error/), killed) },
  { name: "a getter that loops while the result is serialised", lang: "js", evasive: true, runaway: true, code: () => "({ get x() { for (;;) {} } })", check: killed },
  { name: "a thrown object whose getter loops while the host reads the error", lang: "js", evasive: true, runaway: true, code: () => "throw { get message() { for (;;) {} } }", check: failed("timeout") },
  { name: "infinite loop", lang: "js", evasive: true, runaway: true, code: () => "for (;;) {}", check: failed("timeout") },
  { name: "microtask loop", lang: "js", evasive: true, runaway: true, code: () => "(async () => { for (;;) await null })()", check: failed("timeout") },
  { name: "catastrophic regex", lang: "js", evasive: true, runaway: true, code: () => "/(a+)+$/.test('a'.repeat(40) + 'b')", check: failed("timeout") },
  { name: "object allocation bomb", lang: "js", evasive: true, runaway: true, code: () => "const a = []; for (;;) a.push({ i: a.length, s: 'x' + a.length })", check: killed },
  { name: "string doubling bomb", lang: "js", evasive: true, code: () => "let s = 'x'; for (;;) s += s", check: either(raised(/string too long|out of memory|RangeError/), killed) },
  { name: "output flood", lang: "js", evasive: true, runaway: true, code: () => "for (;;) console.log('y'.repeat(1000))", check: failed("resource_exhausted") },
  { name: "deep recursion", lang: "js", evasive: true, code: () => "const f = () => f(); f()", check: raised(/stack overflow|RangeError|InternalError/) },
];

const py = (lines: string[]) => lines.join("\n");
const JSFINDER_BYPASS = (t: Targets) =>
  py([
    "mp = getattr(__builtins__, '__imp' + 'ort__')('sys').meta_path",
    "finders = [f for f in mp if hasattr(f, 'jsproxies')]",
    "g = finders[0].jsproxies.get('j' + 's') if finders else None",
    "out = ['no bridge' if g is None else 'bridge']",
    "if g is not None:",
    "    p = getattr(g, 'pro' + 'cess')",
    "    out.append(str(g.Object.keys(p.env)))",
    "    for attempt in (lambda: p.getBuiltinModule('fs').readFileSync(" + JSON.stringify(t.canaryPath) + ", 'utf8'),",
    "                    lambda: p.getBuiltinModule('child_' + 'process').execSync('id')):",
    "        try:",
    "            out.append(str(attempt()))",
    "        except Exception as e:",
    "            out.append(type(e).__name__ + ': ' + str(e)[:80])",
    "out",
  ]);

// Several attempts in one Python case share one interpreter start (the costly part); each
// attempt is caught on its own and reported, so one refusal does not hide the next.
const tries = (attempts: string[]) =>
  py([
    "out = []",
    ...attempts.flatMap((a) => ["try:", `    out.append(str(${a})[:200])`, "except BaseException as e:", "    out.append(type(e).__name__ + ': ' + str(e)[:120])"]),
    "out",
  ]);
/** Every attempt in a `tries` case was refused with an error matching `re`. */
const allRefused = (n: number, re: RegExp) => (o: Outcome) => {
  expect(o.kind === "ran" && o.r.ok, text(o)).toBe(true);
  const items = o.kind === "ran" ? (o.r.result ?? "").slice(1, -1).split(/', '|", "|', "|", '/) : [];
  expect(items, text(o)).toHaveLength(n);
  for (const item of items) expect(item, text(o)).toMatch(re);
};

const PY: EscapeCase[] = [
  {
    name: "the JS bridge modules cannot be imported (import js, pyodide_js, pyodide.code, importlib, micropip)",
    lang: "py",
    code: () =>
      tries([
        "__import__('js').process.env",
        "__import__('pyodide_js')._api",
        "__import__('pyodide.code', fromlist=['run_js']).run_js('process.env')",
        "__import__('importlib').import_module('pyo' + 'dide_js')",
        "__import__('micropip')",
      ]),
    check: allRefused(5, /ImportError|ModuleNotFoundError/),
  },
  {
    name: "built names: __import__('j'+'s'), open, input",
    lang: "py",
    evasive: true,
    code: (t) => tries(["getattr(__builtins__, '__imp' + 'ort__')('j' + 's')", `getattr(__builtins__, 'op' + 'en')(${JSON.stringify(t.canaryPath)}).read()`, "getattr(__builtins__, 'inp' + 'ut')()"]),
    check: allRefused(3, /ImportError|FileNotFoundError|EOFError|OSError/),
  },
  {
    name: "object-graph walks: __subclasses__ to os.getcwd, gc for surviving bridge modules",
    lang: "py",
    evasive: true,
    code: () =>
      tries([
        "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings'][0].__init__.__globals__['sys'].modules['o' + 's'].getcwd()",
        "[str(getattr(m, 'pro' + 'cess').env) for m in getattr(__builtins__, '__imp' + 'ort__')('gc').get_objects() if type(m).__name__ == 'module' and getattr(m, '__name__', '') in ('j' + 's', 'pyodide_js')]",
      ]),
    check: (o, t) => {
      expect(o.kind === "ran" && o.r.ok, text(o)).toBe(true);
      expect(text(o)).not.toContain(t.hostCwd);
    },
  },
  { name: "layer-2 bypass through the JsFinder, then the host's env, fs and processes", lang: "py", evasive: true, code: JSFINDER_BYPASS, check: never(/uid=/) },
  { name: "os.environ holds no host variables", lang: "py", code: () => "import os\nsorted(os.environ)", check: never(/TOOLS_ESCAPE|VITEST|NODE_|npm_/) },
  {
    name: "host files: read the canary, list /, write outside",
    lang: "py",
    code: (t) => tries([`open(${JSON.stringify(t.canaryPath)}).read()`, "sorted(__import__('os').listdir('/'))", `open(${JSON.stringify(t.pwnedPath)}, 'w').write('pwned')`]),
    check: (o) => {
      expect(text(o)).not.toMatch(/'work'|'root'|'etc'|'sandbox'/);
      expect(text(o).match(/FileNotFoundError/g)).toHaveLength(2);
    },
  },
  {
    name: "processes and network: os.system, subprocess, a socket to the loopback listener",
    lang: "py",
    code: (t) =>
      tries([
        `__import__('socket').create_connection(('127.0.0.1', ${t.port}), 1).send(b'hi')`,
        `__import__('subprocess').run(['cat', ${JSON.stringify(t.canaryPath)}], capture_output=True).stdout`,
        "__import__('os').system('id')",
      ]),
    check: either((o) => {
      never(/uid=/)(o);
      expect(text(o)).toMatch(/^\['OSError.*OSError/);
    }, failed("tool_error")),
  },
  { name: "socket module from a built name", lang: "py", evasive: true, code: (t) => `getattr(__builtins__, '__imp' + 'ort__')('soc' + 'ket').create_connection(('127.0.0.1', ${t.port}), 1)`, check: raised(/Error/) },
  { name: "one huge allocation", lang: "py", evasive: true, code: () => "b = bytearray(3 * 10**9)", check: either(failed("resource_exhausted"), raised(/MemoryError|OverflowError/)) },
  { name: "allocation growth", lang: "py", evasive: true, runaway: true, code: () => "a = []\nwhile True:\n    a.append(bytearray(10**8))", check: killed },
  { name: "output flood", lang: "py", evasive: true, runaway: true, code: () => "while True:\n    print('y' * 1000)", check: failed("resource_exhausted") },
  { name: "deep recursion", lang: "py", evasive: true, code: () => "def f():\n    return f()\nf()", check: either(raised(/RecursionError|RangeError|call stack/), failed("tool_error", "timeout")) },
];

const OPEN: EscapeCase[] = [
  {
    name: "import js / pyodide run_js: the host env is empty",
    lang: "py-open",
    code: () => tries(["list(__import__('js').Object.keys(__import__('js').process.env))", "__import__('pyodide.code', fromlist=['run_js']).run_js('Object.keys(process.env).join()')"]),
    check: (o) => expect(o.kind === "ran" && o.r.ok && /^\["\[('PWD')?\]", '(PWD)?'\]$/.test(o.r.result ?? ""), text(o)).toBe(true),
  },
  {
    name: "import js: Node fs reads the canary, lists /, writes outside",
    lang: "py-open",
    code: (t) =>
      tries([
        `__import__('js').process.getBuiltinModule('fs').readFileSync(${JSON.stringify(t.canaryPath)}, 'utf8')`,
        "__import__('js').process.getBuiltinModule('fs').readdirSync('/').to_py()",
        `__import__('js').process.getBuiltinModule('fs').writeFileSync(${JSON.stringify(t.pwnedPath)}, 'pwned')`,
      ]),
    check: allRefused(3, /restricted/),
  },
  {
    name: "import js: child_process and worker threads",
    lang: "py-open",
    code: (t) =>
      tries([
        `__import__('js').process.getBuiltinModule('child_process').execSync('cat ${t.canaryPath}')`,
        "__import__('js').process.getBuiltinModule('worker_threads').Worker.new('1', __import__('js').Object.fromEntries([['eval', True]]))",
      ]),
    check: allRefused(2, /restricted/),
  },
  { name: "import js: TCP connect to the loopback listener", lang: "py-open", code: (t) => py(["import js, asyncio", "events = []", `s = js.process.getBuiltinModule('net').connect(${t.port}, '127.0.0.1')`, "s.on('error', lambda e, *a: events.append(str(e.code)))", "s.on('connect', lambda *a: events.append('connected'))", "await asyncio.sleep(0.5)", "events"]), check: never(/connected/) },
  { name: "import js: fetch the loopback listener", lang: "py-open", code: (t) => `import js\nawait js.fetch('http://127.0.0.1:${t.port}/')`, check: raised(/fetch failed|Error/) },
  { name: "import js: kill the sandbox's parent", lang: "py-open", code: () => "import js\njs.process.kill(js.process.ppid, 9)\n'still here'", check: contained() },
];

/** Every case, JS first. */
export const ESCAPE_CASES: readonly EscapeCase[] = [...JS, ...PY, ...OPEN];
