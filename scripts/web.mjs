#!/usr/bin/env node
// The web page and HTTP API on this machine:
//   npm run web
// Like `npm run ask`: goes through the preflight (Node 24, dependencies, the NATS and Redis
// binaries: see scripts/ensure-deps.mjs) and makes sure NATS and Redis answer at
// NATS_URL/REDIS_URL (starting the local binaries). Then runs the coordinator and every agent in
// one process and a gateway on 127.0.0.1 (AGENTMESH_GATEWAY_PORT, default 8080) that takes
// requests without an API key (AGENTMESH_GATEWAY_ANONYMOUS=1: hence loopback only), prints its
// URL and runs until Ctrl-C, which stops everything it started.
// Node built-ins only: this runs before dependencies are installed.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { preflight } from "./ensure-deps.mjs";
import { root, startLocalStack } from "./local-stack.mjs";

// Under Node older than 24 this runs the script again under the pinned Node and exits with it.
await preflight("web");

const say = (s) => process.stderr.write(`[web] ${s}\n`);
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const port = process.env.AGENTMESH_GATEWAY_PORT ?? "8080";
const url = `http://127.0.0.1:${port}`;
/** NATS and Redis (when started here) first, then the local runner, then the gateway. */
const started = [];

/** Waits until the gateway's /readyz answers 200, or it exits. */
async function waitReady(gateway, ms) {
  let exited = null;
  gateway.once("exit", (code) => {
    exited = code ?? 1;
  });
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (exited !== null)
      throw new Error(`the gateway exited (${exited}); is port ${port} free? (AGENTMESH_GATEWAY_PORT picks another)`);
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the gateway did not become ready on ${url} within ${ms / 1000} s`);
}

async function main() {
  const env = await startLocalStack({ natsUrl, redisUrl, say, started });
  const gateway = spawn(process.execPath, ["--import", "tsx", join(root, "services/gateway/src/main.ts")], {
    cwd: root,
    env: {
      ...env,
      AGENTMESH_GATEWAY_HOST: "127.0.0.1",
      AGENTMESH_GATEWAY_PORT: port,
      AGENTMESH_GATEWAY_ANONYMOUS: "1",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  started.push(gateway);
  await waitReady(gateway, 60_000);
  process.stdout.write(
    `\n  agentmesh is running: ${url}\n  (API: ${url}/api/v1, OpenAI-compatible: ${url}/v1; no API key needed here.) Ctrl-C stops it.\n\n`,
  );
  await new Promise((resolve) => gateway.once("exit", resolve));
  throw new Error("the gateway stopped");
}

/** SIGTERM to everything started, newest first, each given a moment to drain before the next. */
async function stopAll() {
  for (const p of started.reverse()) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    const gone = new Promise((resolve) => p.once("exit", resolve));
    p.kill("SIGTERM");
    await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
  }
}

let stopping = false;
process.on("SIGINT", () => {
  if (stopping) return;
  stopping = true;
  say("stopping");
  void stopAll().then(() => process.exit(130));
});
main().catch(async (err) => {
  if (stopping) return;
  stopping = true;
  say(err.message);
  await stopAll();
  process.exit(1);
});
