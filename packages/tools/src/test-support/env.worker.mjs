// Test-only worker entry: answers every message with the environment and argv it sees, so a
// test can check what a compute pool's worker inherits from its host.
import { parentPort } from "node:worker_threads";

parentPort.on("message", ({ id }) => {
  parentPort.postMessage({ id, ok: true, value: { env: { ...process.env }, execArgv: process.execArgv } });
});
