// The sandbox escape cases run by src/sandbox-escape.test.ts (test-only; not shipped).
//
// Each case is code an attacker would try, the runner it goes to, and what containment looks
// like for it. On top of each case's own check, the suite checks every outcome for the canaries
// (a secret in a host file, a secret in the host env, the host's cwd), a loopback listener that
// must see no connection, and a host file that must never be written.
import { expect } from "vitest";
import { OS_CASES } from "./escape-cases-os.js";
import {
  allRefused,
  contained,
  either,
  failed,
  killed,
  never,
  py,
  raised,
  text,
  tries,
  value,
  violation,
  type EscapeCase,
  type Targets,
} from "./escape-checks.js";

export type { Lang, Outcome, Targets } from "./escape-checks.js";

const JS: EscapeCase[] = [
  {
    name: "host globals are absent",
    lang: "js",
    evasive: true,
    code: () =>
      "[typeof process, typeof require, typeof module, typeof Buffer, typeof global, typeof fetch, typeof setTimeout, typeof setInterval, typeof XMLHttpRequest, typeof WebSocket, typeof WebAssembly].join()",
    check: value(Array(11).fill("undefined").join()),
  },
  {
    name: "this.constructor.constructor('return process')()",
    lang: "js",
    code: () => "this.constructor.constructor('return process')()",
    check: raised(/ReferenceError: .*process/),
  },
  {
    name: "constructor chain with a built name",
    lang: "js",
    evasive: true,
    code: () => "this.constructor.constructor('return pro' + 'cess')()",
    check: raised(/ReferenceError/),
  },
  {
    name: "Function('return this')() is the guest global",
    lang: "js",
    evasive: true,
    code: () =>
      "const g = Function('return this')(); [typeof g['pro' + 'cess'], typeof g['req' + 'uire'], g === globalThis].join()",
    check: value("undefined,undefined,true"),
  },
  {
    name: "unicode-escaped identifier",
    lang: "js",
    evasive: true,
    code: () => "typeof \\u0070rocess",
    check: value("undefined"),
  },
  {
    name: "AsyncFunction constructor",
    lang: "js",
    evasive: true,
    code: () => "(async function () {}).constructor('return typeof globalThis.pro' + 'cess')()",
    check: value("undefined"),
  },
  {
    name: "GeneratorFunction constructor",
    lang: "js",
    evasive: true,
    code: () => "Object.getPrototypeOf(function* () {}).constructor('yield typeof req' + 'uire')().next().value",
    check: value("undefined"),
  },
  {
    name: "AsyncGeneratorFunction constructor",
    lang: "js",
    evasive: true,
    code: () =>
      "(async () => { const G = Object.getPrototypeOf(async function* () {}).constructor; return (await G('yield typeof globalThis.Buf' + 'fer')().next()).value })()",
    check: value("undefined"),
  },
  {
    name: "Promise.then's constructor",
    lang: "js",
    evasive: true,
    code: () => "Promise.resolve().then.constructor('return typeof pro' + 'cess')()",
    check: value("undefined"),
  },
  {
    name: "thenable resolve function's constructor (vm2 CVE class)",
    lang: "js",
    evasive: true,
    code: () =>
      "(async () => { let leaked; await { then(resolve) { leaked = resolve.constructor('return typeof pro' + 'cess')(); resolve(); } }; return leaked })()",
    check: value("undefined"),
  },
  {
    name: "Promise species subclass",
    lang: "js",
    evasive: true,
    code: () =>
      "class P extends Promise { static get [Symbol.species]() { return Promise } }; P.resolve(1).then((v) => v.constructor.constructor('return typeof pro' + 'cess')())",
    check: value("undefined"),
  },
  {
    name: "Error.prepareStackTrace frames",
    lang: "js",
    evasive: true,
    code: () =>
      "Error.prepareStackTrace = (e, frames) => frames.map((f) => typeof f?.getThis === 'function' ? typeof f.getThis()?.pro\\u0063ess : 'none'); const s = new Error('x').stack; JSON.stringify(s)",
    check: never(/object|node:|quickjs\.worker/),
  },
  {
    name: "stack traces name guest code only",
    lang: "js",
    evasive: true,
    code: () => "function f() { return new Error('x').stack } f()",
    check: never(/node:|\/work\/|worker|\.mjs/),
  },
  {
    name: "Proxy traps while the host formats console output",
    lang: "js",
    evasive: true,
    code: () =>
      "console.log(new Proxy({}, { ownKeys() { throw new Error('trap') }, get() { throw new Error('trap') } })); 'after'",
    check: either(value("after"), raised(/trap|TypeError/)),
  },
  {
    name: "Proxy around the console bridge",
    lang: "js",
    evasive: true,
    code: () => "const p = new Proxy(console.log, { apply(t, self, args) { return typeof self } }); p.call({}, 1)",
    check: value("object"),
  },
  {
    name: "console bridge's constructor",
    lang: "js",
    evasive: true,
    code: () => "console.log.constructor('return typeof pro' + 'cess')()",
    check: value("undefined"),
  },
  {
    name: "console has only the shimmed methods",
    lang: "js",
    evasive: true,
    code: () => "Object.getOwnPropertyNames(console).join()",
    check: value("log,info,debug,warn,error"),
  },
  {
    name: "eval built from strings is guest eval",
    lang: "js",
    evasive: true,
    code: () => "globalThis['ev' + 'al']('typeof pro' + 'cess')",
    check: value("undefined"),
  },
  {
    name: "no host names among the global's keys",
    lang: "js",
    evasive: true,
    code: () =>
      "Reflect.ownKeys(globalThis).map(String).filter((k) => /^(process|require|Buffer|fetch|module|exports|std|os|scriptArgs|setTimeout)$/.test(k)).length",
    check: value("0"),
  },
  {
    name: "caller chain ends in the guest",
    lang: "js",
    evasive: true,
    code: () => "(function f() { return f.caller == null ? 'no caller' : typeof f.caller })()",
    check: value("no caller"),
  },
  {
    name: "dynamic import of a Node module",
    lang: "js",
    code: () => "import('node:child_process').then(() => 'loaded')",
    check: raised(/could not load module|not defined|Error/),
  },
  {
    name: "dynamic import of quickjs-libc's os module",
    lang: "js",
    code: () => "import('os').then((m) => typeof m.exec)",
    check: raised(/could not load module|Error/),
  },
  {
    name: "static import is a syntax error in a script",
    lang: "js",
    code: () => "import * as fs from 'fs'; fs.readFileSync('/etc/passwd')",
    check: raised(/SyntaxError|could not load module/),
  },
  {
    name: "SharedArrayBuffer + Atomics.wait cannot hang the host",
    lang: "js",
    evasive: true,
    code: () =>
      "typeof SharedArrayBuffer === 'function' && typeof Atomics === 'object' ? Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000) : 'no shared memory'",
    check: either(value("no shared memory"), raised(/Error/), killed),
  },
  {
    name: "a getter that loops while the result is serialised",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "({ get x() { for (;;) {} } })",
    check: killed,
  },
  {
    name: "a thrown object whose getter loops while the host reads the error",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "throw { get message() { for (;;) {} } }",
    check: failed("timeout"),
  },
  {
    name: "infinite loop",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "for (;;) {}",
    check: failed("timeout"),
  },
  {
    name: "microtask loop",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "(async () => { for (;;) await null })()",
    check: failed("timeout"),
  },
  {
    name: "catastrophic regex",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "/(a+)+$/.test('a'.repeat(40) + 'b')",
    check: failed("timeout"),
  },
  {
    name: "object allocation bomb",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "const a = []; for (;;) a.push({ i: a.length, s: 'x' + a.length })",
    check: killed,
  },
  {
    name: "string doubling bomb",
    lang: "js",
    evasive: true,
    code: () => "let s = 'x'; for (;;) s += s",
    check: either(raised(/string too long|out of memory|RangeError/), killed),
  },
  {
    name: "output flood",
    lang: "js",
    evasive: true,
    runaway: true,
    code: () => "for (;;) console.log('y'.repeat(1000))",
    check: failed("resource_exhausted"),
  },
  {
    name: "deep recursion",
    lang: "js",
    evasive: true,
    code: () => "const f = () => f(); f()",
    check: raised(/stack overflow|RangeError|InternalError/),
  },
];

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
    code: (t) =>
      tries([
        "getattr(__builtins__, '__imp' + 'ort__')('j' + 's')",
        `getattr(__builtins__, 'op' + 'en')(${JSON.stringify(t.canaryPath)}).read()`,
        "getattr(__builtins__, 'inp' + 'ut')()",
      ]),
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
  {
    name: "layer-2 bypass through the JsFinder, then the host's env, fs and processes",
    lang: "py",
    evasive: true,
    code: JSFINDER_BYPASS,
    check: never(/uid=/),
  },
  {
    name: "os.environ holds no host variables",
    lang: "py",
    code: () => "import os\nsorted(os.environ)",
    check: never(/TOOLS_ESCAPE|VITEST|NODE_|npm_/),
  },
  {
    name: "host files: read the canary, list /, write outside",
    lang: "py",
    code: (t) =>
      tries([
        `open(${JSON.stringify(t.canaryPath)}).read()`,
        "sorted(__import__('os').listdir('/'))",
        `open(${JSON.stringify(t.pwnedPath)}, 'w').write('pwned')`,
      ]),
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
  {
    name: "socket module from a built name",
    lang: "py",
    evasive: true,
    code: (t) =>
      `getattr(__builtins__, '__imp' + 'ort__')('soc' + 'ket').create_connection(('127.0.0.1', ${t.port}), 1)`,
    check: raised(/Error/),
  },
  {
    name: "one huge allocation",
    lang: "py",
    evasive: true,
    code: () => "b = bytearray(3 * 10**9)",
    check: either(failed("resource_exhausted"), raised(/MemoryError|OverflowError/)),
  },
  {
    name: "allocation growth",
    lang: "py",
    evasive: true,
    runaway: true,
    code: () => "a = []\nwhile True:\n    a.append(bytearray(10**8))",
    check: killed,
  },
  {
    name: "output flood",
    lang: "py",
    evasive: true,
    runaway: true,
    code: () => "while True:\n    print('y' * 1000)",
    check: failed("resource_exhausted"),
  },
  {
    name: "deep recursion",
    lang: "py",
    evasive: true,
    code: () => "def f():\n    return f()\nf()",
    check: either(raised(/RecursionError|RangeError|call stack/), failed("tool_error", "timeout")),
  },
];

const OPEN: EscapeCase[] = [
  {
    name: "import js / pyodide run_js: the host env is empty",
    lang: "py-open",
    code: () =>
      tries([
        "list(__import__('js').Object.keys(__import__('js').process.env))",
        "__import__('pyodide.code', fromlist=['run_js']).run_js('Object.keys(process.env).join()')",
      ]),
    // (run_js cannot compile anything at all: code generation from strings is off)
    check: (o) =>
      expect(
        o.kind === "ran" &&
          o.r.ok &&
          /^\["\[('PWD')?\]", '(PWD)?|JsException: EvalError: Code generation from strings disallowed[^']*'\]$/.test(
            o.r.result ?? "",
          ),
        text(o),
      ).toBe(true),
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
  {
    name: "import js: TCP connect to the loopback listener",
    lang: "py-open",
    code: (t) =>
      py([
        "import js, asyncio",
        "events = []",
        `s = js.process.getBuiltinModule('net').connect(${t.port}, '127.0.0.1')`,
        "s.on('error', lambda e, *a: events.append(str(e.code)))",
        "s.on('connect', lambda *a: events.append('connected'))",
        "await asyncio.sleep(0.5)",
        "events",
      ]),
    check: never(/connected/),
  },
  {
    name: "import js: fetch the loopback listener",
    lang: "py-open",
    code: (t) => `import js\nawait js.fetch('http://127.0.0.1:${t.port}/')`,
    check: raised(/fetch failed|Error/),
  },
  {
    name: "import js: kill the sandbox's parent",
    lang: "py-open",
    code: () => "import js\njs.process.kill(js.process.ppid, 9)\n'still here'",
    check: contained(),
  },
];

// Routes from Python to the JS host that a review and an attack run found, and their cousins.
const ROUTES: EscapeCase[] = [
  {
    name: "ctypes -> emscripten_run_script_string evaluates JS in the host (reaches process)",
    lang: "py",
    code: () =>
      tries([
        "getattr(__builtins__, '__imp' + 'ort__')('cty' + 'pes')",
        "(lambda c: (setattr(c.CDLL(None).emscripten_run_script_string, 'restype', c.c_char_p), c.CDLL(None).emscripten_run_script_string(b\"typeof process === 'object' ? 'PROCESS:' + Object.keys(process.env).join() : 'none'\"))[1])(getattr(__builtins__, '__imp' + 'ort__')('cty' + 'pes'))",
      ]),
    check: (o) => {
      never(/PROCESS:/)(o);
      allRefused(2, /ImportError/)(o);
    },
  },
  {
    name: "_ctypes through the builtin importer, importlib and a cleared sys.modules",
    lang: "py",
    code: () =>
      tries([
        "__import__('_imp').create_builtin(type('S', (), {'name': '_cty' + 'pes'})())",
        "__import__('importlib.machinery', fromlist=['x']).BuiltinImporter.create_module(type('S', (), {'name': '_cty' + 'pes'})())",
        "(__import__('sys').modules.pop('_ctypes', None), __import__('sys').meta_path.clear(), __import__('_ctypes'))[2]",
        "__import__('importlib').import_module('ctypes.util')",
      ]),
    check: allRefused(4, /ImportError|ModuleNotFoundError/),
  },
  {
    name: "asyncio loop method __globals__ -> a JsProxy -> Function('return process')",
    lang: "py",
    code: () =>
      py([
        "import asyncio",
        "loop = asyncio.get_event_loop()",
        "proxies = []",
        "for name in dir(loop):",
        "    f = getattr(getattr(loop, name, None), '__func__', None)",
        "    for v in (getattr(f, '__globals__', None) or {}).values():",
        "        if type(v).__name__.startswith('Js'):",
        "            proxies.append(v)",
        "out = [len(proxies) > 0]",
        "for p in proxies[:3]:",
        "    for attempt in (lambda: p.constructor('return typeof pro' + 'cess')(), lambda: p.constructor('return this')().process, lambda: getattr(p, 'pro' + 'cess')):",
        "        try:",
        "            out.append(str(attempt())[:80])",
        "        except BaseException as e:",
        "            out.append(type(e).__name__ + ': ' + str(e)[:60])",
        "out",
      ]),
    check: (o) => {
      expect(o.kind === "ran" && o.r.ok, text(o)).toBe(true);
      never(/'object'|\[object process\]|<JsProxy/)(o);
      expect(text(o)).toMatch(/EvalError|Code generation from strings disallowed|undefined|None/);
    },
  },
  {
    name: "every JsProxy in the object graph: none compiles code or reaches process",
    lang: "py",
    code: () =>
      py([
        "import gc",
        "found, reached = 0, []",
        "for obj in gc.get_objects():",
        "    if not type(obj).__name__.startswith('Js'):",
        "        continue",
        "    found += 1",
        "    for attempt in (lambda: obj.constructor.constructor('return globalThis.pro' + 'cess')(), lambda: getattr(obj, 'pro' + 'cess')):",
        "        try:",
        "            r = attempt()",
        "            if r is not None and str(r) != 'undefined':",
        "                reached.append(str(r)[:60])",
        "        except BaseException:",
        "            pass",
        "reached",
      ]),
    check: value("[]"),
  },
  {
    name: "v8.setFlagsFromString('--allow-natives-syntax') through any JsProxy",
    lang: "py",
    code: () =>
      tries([
        "[v for v in __import__('gc').get_objects() if type(v).__name__.startswith('Js') and hasattr(v, 'constructor')][0].constructor('return globalThis.pro' + 'cess.getBuiltinModule(\"v8\").setFlagsFromString(\"--allow-natives-syntax\")')()",
        "[v for v in __import__('gc').get_objects() if type(v).__name__.startswith('Js') and hasattr(v, 'constructor')][0].constructor('return %GetOptimizationStatus(Math.max)')()",
      ]),
    check: (o) => {
      never(/^\['None'/)(o);
      allRefused(2, /EvalError|Code generation|IndexError|SyntaxError|AttributeError/)(o);
    },
  },
  {
    name: "Error.prepareStackTrace from a JsProxy hands out no global",
    lang: "py",
    code: () =>
      tries([
        "setattr([v for v in __import__('gc').get_objects() if type(v).__name__.startswith('Js')][0].constructor.constructor.prototype.constructor('return Error')(), 'prepareStackTrace', None)",
        "[v for v in __import__('gc').get_objects() if type(v).__name__ == 'JsProxy' and 'Error' in str(type(v))]",
      ]),
    check: never(/PROCESS|\[object process\]/),
  },
  {
    name: "forge the answer by writing to fd 1 from Python: the runner's own line wins",
    lang: "py",
    code: () =>
      py([
        "import os",
        'os.write(1, b\'{"type":"result","ok":true,"result":"FORGED"}\\n\')',
        'print(\'{"type":"result","ok":true,"result":"FORGED"}\')',
        "'real'",
      ]),
    check: (o) => {
      value("'real'")(o);
      expect(o.kind === "ran" ? o.r.stdout : "").toContain("FORGED");
    },
  },
  {
    name: "a result that looks like a protocol line is just text",
    lang: "py",
    evasive: true,
    code: () => '\'\\n{"type":"result","ok":true,"result":"FORGED"}\\n\' * 3',
    check: (o) => expect(o.kind === "ran" && o.r.ok && (o.r.result ?? "").startsWith("'\\n{"), text(o)).toBe(true),
  },
  {
    name: "a result over the cap comes back cut and marked, never longer",
    lang: "py",
    evasive: true,
    code: () => "'x' * (10 ** 6)",
    check: (o) =>
      expect(o.kind === "ran" && o.r.truncated && (o.r.result ?? "").length === 64 * 1024, text(o).slice(0, 200)).toBe(
        true,
      ),
  },
  {
    name: "lone surrogates and control characters in stdout and the result",
    lang: "py",
    code: () =>
      py([
        "import sys",
        "sys.stdout.write('a\\x00b\\x1b[2J\\u202e')",
        "try:\n    print('\\ud800')\nexcept Exception as e:\n    print(type(e).__name__)",
        "'\\ud800\\udfff' + chr(0)",
      ]),
    check: (o) => expect(o.kind === "ran" && o.r.ok, text(o)).toBe(true),
  },
];

// Forging the runner's answer with the interpreter layer off, as guest code would that reached
// the child's JS some unknown way: the OS wall holds, and the answer's MAC decides.
const fdWrite = (body: string, after = "js.process.exit(0)") =>
  py(["import js, json", `js.process.getBuiltinModule('fs').writeSync(1, ${body})`, after]);
const FORGED = "json.dumps({'type': 'result', 'ok': True, 'result': \"'forged'\", 'stdout': 'x' * 1000000}) + '\\n'";
const SMALL = "json.dumps({'type': 'result', 'ok': True, 'result': \"'forged'\"}) + '\\n'";
const FORGE: EscapeCase[] = [
  // moving 1 MB from Python through JS into the pipe can take seconds on a loaded machine: killed
  // at the deadline is contained too (runners.test.ts asserts the violation itself, with room)
  {
    name: "forged answer without a MAC (ok: true, 1 MB of stdout)",
    lang: "py-open",
    code: () => fdWrite(FORGED),
    check: either(violation, failed("timeout")),
  },
  {
    name: "forged answer with a made-up MAC",
    lang: "py-open",
    code: () => fdWrite(`'${"0f".repeat(32)} ' + ${SMALL}`),
    check: violation,
  },
  {
    name: "forged answer, then the run goes on and the runner answers too",
    lang: "py-open",
    code: () => fdWrite(SMALL, "'real'"),
    check: violation,
  },
  {
    name: "a non-JSON line where the answer goes",
    lang: "py-open",
    code: () => fdWrite("'garbage\\n'"),
    check: violation,
  },
  {
    name: "half a line, so the runner's own answer is glued to it",
    lang: "py-open",
    code: () => fdWrite('\'{"type":"result",\'', "'real'"),
    check: violation,
  },
  {
    name: "a 3 MB line: over what the reader takes at all",
    lang: "py-open",
    code: () => fdWrite("'y' * 3000000 + '\\n'"),
    check: failed("resource_exhausted", "tool_error", "timeout"),
  },
  {
    name: "the ready line again instead of an answer",
    lang: "py-open",
    code: () => fdWrite('\'{"type":"ready"}\\n\''),
    check: violation,
  },
  {
    name: "prototypes and globals patched before the runner signs: toJSON, iterators, JSON, charCodeAt, typed arrays",
    lang: "py-open",
    code: () =>
      py([
        "import js",
        "f = js.Function",
        "for src in ['Object.prototype.toJSON = function () { return {type: \"result\", ok: true, result: \"FORGED\"} }', 'Array.prototype[Symbol.iterator] = function* () { yield \"FORGED\" }', 'JSON.stringify = () => \"FORGED\"', 'String.prototype.charCodeAt = () => 0', 'Object.defineProperty(Uint8Array.prototype, \"length\", { get() { return 0 } })']:",
        "    try:",
        "        f(src)()",
        "    except Exception as e:",
        "        pass",
        "'real'",
      ]),
    check: (o) => {
      never(/FORGED/)(o);
      either(value("'real'"), violation)(o);
    },
  },
  {
    name: "v8.setFlagsFromString('--allow-natives-syntax') is locked",
    lang: "py-open",
    code: () => "import js\njs.process.getBuiltinModule('v8').setFlagsFromString('--allow-natives-syntax')",
    check: raised(/cannot be changed/),
  },
  {
    name: "eval, new Function and pyodide run_js cannot compile code",
    lang: "py-open",
    code: () =>
      tries([
        "__import__('js').eval('1 + 1')",
        "__import__('js').Function('return 1')()",
        "__import__('pyodide.code', fromlist=['run_js']).run_js('1 + 1')",
      ]),
    check: allRefused(3, /EvalError|Code generation/),
  },
  {
    name: "ctypes -> emscripten_run_script with the interpreter layer off: no code is compiled",
    lang: "py-open",
    code: () =>
      py([
        "import ctypes",
        "f = ctypes.CDLL(None).emscripten_run_script_string",
        "f.restype = ctypes.c_char_p",
        "f(b\"'PROCESS:' + Object.keys(process.env).join()\")",
      ]),
    check: (o) => {
      never(/PROCESS:/)(o);
      either(raised(/EvalError|Error/), failed("tool_error", "timeout"))(o);
    },
  },
  {
    name: "inspector, addons and WASI are refused by the permission model",
    lang: "py-open",
    code: () =>
      tries([
        "__import__('js').process.getBuiltinModule('inspector').Session.new().connect()",
        "__import__('js').process.dlopen(__import__('js').Object.new(), '/usr/lib/x86_64-linux-gnu/libc.so.6')",
        "__import__('js').process.getBuiltinModule('wasi').WASI.new(__import__('js').Object.fromEntries([['version', 'preview1']]))",
      ]),
    check: allRefused(3, /restricted|ERR_ACCESS_DENIED|addons is disabled/),
  },
  {
    name: "/proc and the host's environ from Node fs",
    lang: "py-open",
    code: () =>
      tries([
        "__import__('js').process.getBuiltinModule('fs').readFileSync('/proc/self/environ', 'utf8')",
        "__import__('js').process.getBuiltinModule('fs').readdirSync('/proc').to_py()",
      ]),
    check: allRefused(2, /restricted|ERR_ACCESS_DENIED/),
  },
  {
    name: "setuid and chroot from Node",
    lang: "py-open",
    code: () =>
      tries([
        "__import__('js').process.setuid(0)",
        "__import__('js').process.setgid(0)",
        "__import__('js').process.chdir('/')",
      ]),
    check: (o) => never(/^\['None', 'None'/)(o),
  },
];

// Ordinary escape routes inside Pyodide with both walls up.
const PY_MORE: EscapeCase[] = [
  {
    name: "the filesystem is Pyodide's own: / holds no host or sandbox directories",
    lang: "py",
    code: () => "import os\nsorted(os.listdir('/'))",
    check: never(/'work'|'root'|'sandbox'|'usr'|'etc'/),
  },
  {
    name: "walking up from the cwd stays in the in-memory filesystem",
    lang: "py",
    code: () => "import os\nfor _ in range(20):\n    os.chdir('..')\n[os.getcwd(), sorted(os.listdir('.'))]",
    check: never(/'work'|'sandbox'|'usr'/),
  },
  {
    name: "the child script and the snapshot are not visible from Python",
    lang: "py",
    code: () =>
      tries([
        "open('/sandbox/child.mjs').read()",
        "open('/sandbox/snapshot.bin', 'rb').read(4)",
        "open('/usr/bin/node', 'rb').read(4)",
      ]),
    check: allRefused(3, /FileNotFoundError/),
  },
  {
    name: "/proc/self/environ, maps, status and /proc/1/cmdline",
    lang: "py",
    code: () =>
      tries([
        "open('/proc/self/environ').read()",
        "open('/proc/self/maps').read()",
        "open('/proc/self/status').read()",
        "open('/proc/1/cmdline').read()",
      ]),
    check: (o) => never(/TOOLS_ESCAPE|node|bwrap|Uid:/)(o),
  },
  {
    name: "pathlib walk of / finds no canary",
    lang: "py",
    code: () => "import pathlib\nsum(1 for p in pathlib.Path('/').rglob('canary*'))",
    check: value("0"),
  },
  {
    name: "a file written to /tmp is the interpreter's memory, gone next call",
    lang: "py",
    code: () => "open('/tmp/x', 'w').write('y' * 1000)",
    check: value("1000"),
  },
  {
    name: "writing 2 GB to a file is a memory limit, not a host disk",
    lang: "py",
    runaway: true,
    code: () => "f = open('/tmp/big', 'wb')\nwhile True:\n    f.write(b'z' * 10**7)",
    check: either(killed, raised(/MemoryError|OSError|No space/)),
  },
  {
    name: "urllib to the loopback listener",
    lang: "py",
    code: (t) => `import urllib.request\nurllib.request.urlopen('http://127.0.0.1:${t.port}/', timeout=1).read()`,
    check: either(raised(/Error/), failed("timeout")),
  },
  {
    name: "http.client to the loopback listener",
    lang: "py",
    code: (t) =>
      `import http.client\nc = http.client.HTTPConnection('127.0.0.1', ${t.port}, timeout=1)\nc.request('GET', '/')`,
    check: either(raised(/Error/), failed("timeout")),
  },
  {
    name: "sockets: AF_INET, AF_INET6, AF_UNIX, socketpair, UDP",
    lang: "py",
    code: (t) =>
      tries([
        `__import__('socket').socket().connect(('127.0.0.1', ${t.port}))`,
        `__import__('socket').socket(__import__('socket').AF_INET6).connect(('::1', ${t.port}))`,
        "__import__('socket').socket(__import__('socket').AF_UNIX).connect('/tmp/s')",
        "__import__('socket').socketpair()",
        `__import__('socket').socket(type=__import__('socket').SOCK_DGRAM).sendto(b'x', ('127.0.0.1', ${t.port}))`,
      ]),
    check: (o) => never(/'1'\]$/)(o),
  },
  {
    name: "asyncio.open_connection to the loopback listener",
    lang: "py",
    code: (t) => `import asyncio\nawait asyncio.wait_for(asyncio.open_connection('127.0.0.1', ${t.port}), 1)`,
    check: either(raised(/Error/), failed("tool_error")),
  },
  {
    name: "pyodide.http / pyfetch are not importable",
    lang: "py",
    code: () =>
      tries(["__import__('pyodide.http', fromlist=['pyfetch'])", "__import__('pyodide.ffi', fromlist=['JsProxy'])"]),
    check: allRefused(2, /ImportError/),
  },
  {
    name: "fork, exec, spawn, posix_spawn",
    lang: "py",
    code: () =>
      tries([
        "__import__('os').fork()",
        "__import__('os').execv('/bin/sh', ['sh'])",
        "__import__('os').spawnv(0, '/bin/sh', ['sh'])",
        "__import__('os').posix_spawn('/bin/sh', ['sh'], {})",
      ]),
    check: allRefused(4, /AttributeError|OSError|NotImplementedError/),
  },
  {
    name: "subprocess.Popen and multiprocessing",
    lang: "py",
    code: () =>
      tries(["__import__('subprocess').Popen(['id'])", "__import__('multiprocessing').Process(target=print).start()"]),
    check: (o) => never(/uid=/)(o),
  },
  {
    name: "threads cannot start",
    lang: "py",
    code: () =>
      tries([
        "__import__('threading').Thread(target=print).start()",
        "__import__('_thread').start_new_thread(print, ())",
      ]),
    check: allRefused(2, /RuntimeError|Error/),
  },
  {
    name: "signals: kill the parent, pid 1, the group",
    lang: "py",
    code: () =>
      tries([
        "__import__('os').kill(__import__('os').getppid(), 9)",
        "__import__('os').kill(1, 9)",
        "__import__('os').killpg(0, 9)",
      ]),
    check: contained(),
  },
  {
    name: "signal handlers and alarms",
    lang: "py",
    code: () =>
      tries([
        "__import__('signal').alarm(1)",
        "__import__('signal').signal(14, lambda *a: None)",
        "__import__('signal').setitimer(0, 0.1)",
      ]),
    check: contained(),
  },
  {
    name: "os.abort() ends the process: a typed failure",
    lang: "py",
    code: () => "import os\nos.abort()",
    check: either(failed("tool_error"), raised(/Error/)),
  },
  {
    name: "os._exit(3) ends the process: a typed failure",
    lang: "py",
    code: () => "import os\nos._exit(3)",
    check: either(failed("tool_error"), raised(/Error|SystemExit/)),
  },
  {
    name: "sys.exit is the code's own error",
    lang: "py",
    code: () => "import sys\nsys.exit('bye')",
    check: either(raised(/SystemExit|bye/), failed("tool_error", "resource_exhausted")),
  },
  {
    name: "identity: uname, uid, pid, hostname show nothing of the host",
    lang: "py",
    code: () => "import os, socket\n[os.uname().nodename, os.getuid(), socket.gethostname()]",
    check: never(/work|root@|agentmesh/),
  },
  { name: "input() has no stdin", lang: "py", code: () => "input()", check: raised(/EOFError|OSError|Error/) },
  {
    name: "CPU runaway: itertools.count",
    lang: "py",
    runaway: true,
    code: () => "import itertools\nfor i in itertools.count():\n    pass",
    check: failed("timeout"),
  },
  {
    name: "catastrophic regex",
    lang: "py",
    runaway: true,
    code: () => "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')",
    check: failed("timeout"),
  },
  {
    name: "a huge power",
    lang: "py",
    evasive: true,
    runaway: true,
    code: () => "x = 7 ** (10 ** 9)",
    check: either(killed, raised(/MemoryError|ValueError|Overflow/)),
  },
  {
    name: "deeply nested literal",
    lang: "py",
    code: () => "eval('[' * 200000 + ']' * 200000)",
    check: either(
      raised(/MemoryError|RecursionError|SyntaxError|too many nested/),
      failed("tool_error", "resource_exhausted", "timeout"),
    ),
  },
  {
    name: "stderr flood",
    lang: "py",
    runaway: true,
    code: () => "import sys\nwhile True:\n    sys.stderr.write('e' * 1000)",
    check: failed("resource_exhausted"),
  },
  {
    name: "flood without newlines",
    lang: "py",
    evasive: true,
    runaway: true,
    code: () => "while True:\n    print('n' * 100000, end='')",
    check: failed("resource_exhausted"),
  },
  {
    name: "asyncio busy loop",
    lang: "py",
    runaway: true,
    code: () => "import asyncio\nwhile True:\n    await asyncio.sleep(0)",
    check: failed("timeout"),
  },
  {
    name: "sleeping past the limit",
    lang: "py",
    runaway: true,
    code: () => "import time\ntime.sleep(100)",
    check: failed("timeout"),
  },
  {
    name: "a self-referencing garbage storm",
    lang: "py",
    evasive: true,
    runaway: true,
    code: () => "while True:\n    a = []\n    a.append(a)\n    b = [a] * 1000",
    check: failed("timeout"),
  },
  {
    name: "a sleep inside the limit completes (the limit runs from the start of the code)",
    lang: "py",
    code: () => "import time\ntime.sleep(1)\n'slept'",
    check: value("'slept'"),
  },
];

/** Every case, JS first. */
export const ESCAPE_CASES: readonly EscapeCase[] = [
  ...JS,
  ...PY,
  ...ROUTES,
  ...PY_MORE,
  ...OPEN,
  ...FORGE,
  ...OS_CASES,
];
