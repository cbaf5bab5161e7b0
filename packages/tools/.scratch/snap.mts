import { spawnSandbox, findBinary } from "../src/runners/sandbox-process.js";
import { mkdtempSync, existsSync, statSync } from "node:fs";
const dir = mkdtempSync("/tmp/snaptest-");
const paths = { bwrap: findBinary("bwrap")!, prlimit: findBinary("prlimit")!, node: process.execPath, pyodideDir: "/work/main/packages/tools/node_modules/pyodide", childScript: "/work/main/packages/tools/src/runners/python-child.mjs" };
let t = performance.now();
const c = spawnSandbox(paths, { mode: "snapshot", harden: true, addressSpaceBytes: 1280 * 2**20, cpuSeconds: 30, outDir: dir });
c.stderr.on("data", (d) => process.stderr.write(d)); c.stdout.on("data", (d) => process.stdout.write(d));
const code = await new Promise((r) => c.on("close", r));
console.log("snapshot exit", code, Math.round(performance.now() - t), existsSync(dir + "/snapshot.bin") && statSync(dir + "/snapshot.bin").size);
for (let i = 0; i < 3; i++) {
  t = performance.now();
  const r = spawnSandbox(paths, { mode: "run", harden: true, addressSpaceBytes: 1280 * 2**20, cpuSeconds: 30, snapshot: dir + "/snapshot.bin" });
  r.stderr.on("data", (d) => process.stderr.write(d));
  await new Promise<void>((res) => r.stdout.once("data", (d) => { console.log("ready", String(d).trim(), Math.round(performance.now() - t)); res(); }));
  r.stdin.end(JSON.stringify({ code: "import sys; sys.version", maxOutputBytes: 1000 }) + "\n");
  await new Promise<void>((res) => r.stdout.once("data", (d) => { console.log(String(d).trim().slice(0, 200), Math.round(performance.now() - t)); res(); }));
}
