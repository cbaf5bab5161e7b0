#!/usr/bin/env node
// Quick start: answers one question end to end on a fresh machine.
//   npm run ask -- "What is 0.1 + 0.2?"
//   npm run ask -- --workflow halo "How does HER2 interact with HER3?"   (options go to `agentmesh ask`)
// Goes through the preflight first (Node 24, dependencies, the NATS and Redis binaries: see
// scripts/ensure-deps.mjs), uses NATS/Redis at NATS_URL/REDIS_URL (defaults on 127.0.0.1),
// starts them from the nats-server/redis-server binaries when they are not running (or says how),
// runs the coordinator and all agents in one local process, asks, and cleans up.
// Node built-ins only: this runs before dependencies are installed.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { preflight } from "./ensure-deps.mjs";
import { root, startLocalStack } from "./local-stack.mjs";

// Under Node older than 24 this runs the script again under the pinned Node and exits with it.
await preflight("ask");

const say = (s) => process.stderr.write(`[quickstart] ${s}\n`);
const args = process.argv.slice(2);
// With options (`--workflow halo`), the arguments go to `agentmesh ask` as they are; else they are the question's words.
const askArgs = args.some((a) => a.startsWith("-")) ? args : [args.join(" ").trim() || "What is 0.1 + 0.2?"];
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const started = [];

function cleanup() {
  for (const p of started.reverse()) p.kill("SIGTERM");
}

async function main() {
  const env = await startLocalStack({ natsUrl, redisUrl, say, started });
  const ask = spawnSync(
    process.execPath,
    ["--import", "tsx", join(root, "services/cli/src/main.ts"), "ask", ...askArgs],
    { cwd: root, env, stdio: "inherit" },
  );
  return ask.status ?? 1;
}

main().then(
  (code) => {
    cleanup();
    process.exit(code);
  },
  (err) => {
    say(err.message);
    cleanup();
    process.exit(1);
  },
);
process.on("SIGINT", () => {
  cleanup();
  process.exit(130);
});
