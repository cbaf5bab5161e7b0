#!/usr/bin/env node
// Quick start: answers one question end to end on a fresh machine.
//   npm run ask -- "What is 0.1 + 0.2?"
// Installs dependencies if needed, uses NATS/Redis at NATS_URL/REDIS_URL (defaults on 127.0.0.1),
// starts them from the nats-server/redis-server binaries when they are not running (or says how),
// runs the coordinator and all agents in one local process, asks, and cleans up.
// Node built-ins only: this runs before dependencies are installed.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createConnection } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureDeps } from "./ensure-deps.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const say = (s) => process.stderr.write(`[quickstart] ${s}\n`);
const question = process.argv.slice(2).join(" ").trim() || "What is 0.1 + 0.2?";
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const started = [];

const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;

function reachable(url) {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol.startsWith("redis") ? 6379 : 4222));
  return new Promise((resolve) => {
    const s = createConnection({ host: u.hostname, port });
    const t = setTimeout(() => { s.destroy(); resolve(false); }, 800);
    s.once("connect", () => { clearTimeout(t); s.end(); resolve(true); });
    s.once("error", () => { clearTimeout(t); resolve(false); });
  });
}

async function waitReachable(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await reachable(url)) return true;
    await new Promise((r) => setTimeout(r, 150));
  }
  return false;
}

async function ensureServer(kind, url, binary, args) {
  if (await reachable(url)) return;
  const host = new URL(url).hostname;
  if (!["127.0.0.1", "localhost"].includes(host)) throw new Error(`${kind} at ${url} does not answer`);
  if (!has(binary)) {
    throw new Error(
      `${kind} is not running at ${url} and ${binary} is not installed. Either start open development servers with Docker\n` +
        `  (not the compose stack's: its NATS and Redis require each service's own credentials):\n` +
        `    docker run -d --rm -p 127.0.0.1:4222:4222 nats:2.10-alpine -js\n    docker run -d --rm -p 127.0.0.1:6379:6379 redis:7.2-alpine\n  or install them (Debian/Ubuntu):\n    sudo apt-get install -y nats-server redis-server\n  then run this again.`,
    );
  }
  say(`starting ${binary} for ${url} (stopped again when done)`);
  const p = spawn(binary, args, { cwd: root, stdio: "ignore", detached: false });
  started.push(p);
  if (!(await waitReachable(url, 10_000))) throw new Error(`${binary} did not start on ${url}`);
}

function cleanup() {
  for (const p of started.reverse()) p.kill("SIGTERM");
}

async function main() {
  ensureDeps();
  const dir = join(root, ".agentmesh");
  mkdirSync(join(dir, "nats"), { recursive: true });
  mkdirSync(join(dir, "redis"), { recursive: true });
  const np = new URL(natsUrl).port || "4222";
  const rp = new URL(redisUrl).port || "6379";
  await ensureServer("NATS", natsUrl, "nats-server", ["-a", "127.0.0.1", "-p", np, "-js", "-sd", join(dir, "nats")]);
  await ensureServer("Redis", redisUrl, "redis-server", ["--port", rp, "--bind", "127.0.0.1", "--dir", join(dir, "redis"), "--appendonly", "yes", "--appendfsync", "always", "--save", ""]);

  const env = { ...process.env, NATS_URL: natsUrl, REDIS_URL: redisUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
  say(process.env.AGENTMESH_LLM_BASE_URL ? `model endpoint ${process.env.AGENTMESH_LLM_BASE_URL}` : "no AGENTMESH_LLM_BASE_URL: using the offline engine");
  const local = spawn(process.execPath, ["--import", "tsx", join(root, "services/local/src/main.ts")], { cwd: root, env: { ...env, LOG_LEVEL: "info" }, stdio: ["ignore", "pipe", "inherit"] });
  started.push(local);
  await new Promise((resolve, reject) => {
    let buf = "";
    const t = setTimeout(() => reject(new Error("the local services did not start within 60 s")), 60_000);
    local.stdout.on("data", (b) => {
      buf += b.toString();
      if (buf.includes("coordinator and agents running")) { clearTimeout(t); resolve(); }
    });
    local.once("exit", (c) => { clearTimeout(t); reject(new Error(`the local services exited (${c})`)); });
  });
  const ask = spawnSync(process.execPath, ["--import", "tsx", join(root, "services/cli/src/main.ts"), "ask", question], { cwd: root, env, stdio: "inherit" });
  return ask.status ?? 1;
}

main().then(
  (code) => { cleanup(); process.exit(code); },
  (err) => { say(err.message); cleanup(); process.exit(1); },
);
process.on("SIGINT", () => { cleanup(); process.exit(130); });
