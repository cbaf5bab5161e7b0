import { createPythonRunner } from "../src/runners/run-python.js";
const r = createPythonRunner({ timeLimitMs: 20000 });
for (const c of ["a=[]\nwhile True: a.append(bytearray(10**7))", "x = bytearray(2*10**9)", "a=[]\nwhile True: a.append(bytearray(10**8))", "'x'*(10**10)", "a=[]\nwhile True: a.append([0]*10**6)"]) {
  const t = performance.now();
  try { const res = await r.run(c); console.log(JSON.stringify(c).slice(0, 70), "=>", JSON.stringify({...res, error: res.error?.slice(-100)}).slice(0, 300), Math.round(performance.now() - t)); }
  catch (e) { console.log(JSON.stringify(c).slice(0, 70), "ERR", (e as any).code, (e as Error).message.slice(0, 300), Math.round(performance.now() - t)); }
}
await r.close();
