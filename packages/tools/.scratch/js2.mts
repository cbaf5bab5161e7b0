import { createJsRunner } from "../src/runners/run-js.js";
for (const mem of [16, 64]) {
const r = createJsRunner({ timeLimitMs: 8000, memoryLimitBytes: mem * 1024 * 1024 });
for (const c of ["let a=[]; while(true) a.push(new Array(100000).fill(1))", "let a=[]; let i=0; while(true) { a.push({i: i++, s: 'x' + i}) }", "let s='x'; while(true) s = s + s;"]) {
  const t = performance.now();
  try { const res = await r.run(c); console.log(mem, c.slice(0, 60), "=>", JSON.stringify(res).slice(0, 200), Math.round(performance.now() - t)); }
  catch (e) { console.log(mem, c.slice(0, 60), "ERR", (e as any).code, (e as Error).message, Math.round(performance.now() - t)); }
}
await r.close();
}
