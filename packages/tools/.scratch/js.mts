import { createJsRunner } from "../src/runners/run-js.js";
const r = createJsRunner({ timeLimitMs: 1000 });
const cases = [
  "1+2", "console.log('hi', {a:1}); [1,2]", "typeof process + typeof require + typeof globalThis.fetch",
  "this.constructor.constructor('return typeof process')()", "while(true){}", "let a=[]; while(true) a.push(new Array(100000).fill(1))",
  "(async () => { await null; return 42 })()", "new Promise(()=>{})", "import('fs').then(m => 'got')", "function f(){return f()} f()",
  "while(true) console.log('x'.repeat(1000))", "'x'.repeat(2**29).length", "/(a+)+$/.test('a'.repeat(40)+'b')", "throw new TypeError('boom')",
];
for (const c of cases) {
  const t = performance.now();
  try { const res = await r.run(c); console.log(JSON.stringify(c).slice(0, 60), "=>", JSON.stringify(res).slice(0, 200), Math.round(performance.now() - t)); }
  catch (e) { console.log(JSON.stringify(c).slice(0, 60), "ERR", (e as any).code, (e as Error).message, Math.round(performance.now() - t)); }
}
await r.close();
