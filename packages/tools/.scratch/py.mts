import { createPythonRunner } from "../src/runners/run-python.js";
const harden = process.argv[2] !== "open";
const r = createPythonRunner({ timeLimitMs: 2000, hardenInterpreter: harden });
let t = performance.now();
console.log(await r.status(), Math.round(performance.now() - t));
const cases = [
  "1+1", "print('hi'); x = [i*i for i in range(5)]\nx", "import js", "import pyodide_js",
  "import os; os.environ.get('HOME')", "import os; os.listdir('/')", "open('/etc/passwd').read()[:50]",
  "import js; js.process.getBuiltinModule('fs').readdirSync('/').to_py()",
  "import js; js.process.getBuiltinModule('fs').readdirSync('/sandbox').to_py()",
  "import js; dict(js.process.env.to_py())",
  "import os; os.system('ls')", "import subprocess; subprocess.run(['ls'])",
  "while True: pass", "a=[]\nwhile True: a.append(bytearray(10**7))", "while True: print('x'*1000)", "1/0",
  "import socket; s=socket.socket(); s.connect(('127.0.0.1', 22))",
  "import asyncio\nawait asyncio.sleep(0.1)\n'slept'",
];
for (const c of cases) {
  t = performance.now();
  try { const res = await r.run(c); console.log(JSON.stringify(c).slice(0, 70), "=>", JSON.stringify({...res, error: res.error?.slice(-150)}).slice(0, 300), Math.round(performance.now() - t)); }
  catch (e) { console.log(JSON.stringify(c).slice(0, 70), "ERR", (e as any).code, (e as Error).message.slice(0, 300), Math.round(performance.now() - t)); }
}
await r.close();
