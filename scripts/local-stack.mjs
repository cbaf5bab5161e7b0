// What `npm run ask` (quickstart.mjs) and `npm run web` (web.mjs) share: NATS and Redis on this
// machine, started from their binaries when they are not running, and the local runner
// (coordinator and every agent in one process). Node built-ins only: this runs before
// dependencies are installed. Every process started here goes into `started`, newest last.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createConnection } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;

/** True when something accepts TCP connections at the URL's host and port. */
function reachable(url) {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol.startsWith("redis") ? 6379 : 4222));
  return new Promise((resolve) => {
    const s = createConnection({ host: u.hostname, port });
    const t = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, 800);
    s.once("connect", () => {
      clearTimeout(t);
      s.end();
      resolve(true);
    });
    s.once("error", () => {
      clearTimeout(t);
      resolve(false);
    });
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

async function ensureServer({ kind, url, binary, args, say, started }) {
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

/** Makes sure NATS (JetStream) and Redis answer at the URLs, starting local binaries (data in .agentmesh/) if needed. */
export async function ensureNatsAndRedis({ natsUrl, redisUrl, say, started }) {
  const dir = join(root, ".agentmesh");
  mkdirSync(join(dir, "nats"), { recursive: true });
  mkdirSync(join(dir, "redis"), { recursive: true });
  // NATS_URL may name a cluster's servers, comma-separated: one answering is enough, and a
  // cluster is never started here
  const natsServers = natsUrl
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((s) => (s.includes("://") ? s : `nats://${s}`));
  if (natsServers.length > 1) {
    const answering = await Promise.all(natsServers.map((s) => reachable(s).catch(() => false)));
    if (!answering.some(Boolean))
      throw new Error(
        `none of the NATS servers in NATS_URL answers (${natsServers.map((s) => s.replace(/\/\/[^@/]*@/, "//")).join(", ")}); this script starts a single server, never a cluster`,
      );
  }
  const np = natsServers.length > 1 ? "" : new URL(natsServers[0] ?? natsUrl).port || "4222";
  const rp = new URL(redisUrl).port || "6379";
  if (natsServers.length <= 1)
    await ensureServer({
      kind: "NATS",
      url: natsUrl,
      binary: "nats-server",
      args: ["-a", "127.0.0.1", "-p", np, "-js", "-sd", join(dir, "nats")],
      say,
      started,
    });
  await ensureServer({
    kind: "Redis",
    url: redisUrl,
    binary: "redis-server",
    args: [
      "--port",
      rp,
      "--bind",
      "127.0.0.1",
      "--dir",
      join(dir, "redis"),
      "--appendonly",
      "yes",
      "--appendfsync",
      "always",
      "--save",
      "",
    ],
    say,
    started,
  });
}

/** Starts the local runner (services/local) with `env`; resolves once its coordinator and agents run. */
export async function startLocalServices(env, started) {
  const local = spawn(process.execPath, ["--import", "tsx", join(root, "services/local/src/main.ts")], {
    cwd: root,
    env: { ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  started.push(local);
  await new Promise((resolve, reject) => {
    let buf = "";
    const t = setTimeout(() => reject(new Error("the local services did not start within 60 s")), 60_000);
    // Read its log to the end (it must never block on a full pipe); only the start line matters.
    local.stdout.on("data", (b) => {
      if (buf === null) return;
      buf += b.toString();
      if (buf.includes("coordinator and agents running")) {
        buf = null;
        clearTimeout(t);
        resolve();
      }
    });
    local.once("exit", (c) => {
      clearTimeout(t);
      reject(new Error(`the local services exited (${c})`));
    });
  });
  return local;
}

/**
 * What both quick-start scripts do after the preflight (Node, dependencies, the NATS and Redis
 * binaries): NATS and Redis, then the coordinator and every agent in one local process. Returns
 * the environment they run with.
 */
export async function startLocalStack({ natsUrl, redisUrl, say, started }) {
  await ensureNatsAndRedis({ natsUrl, redisUrl, say, started });
  const env = { ...process.env, NATS_URL: natsUrl, REDIS_URL: redisUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
  say(
    process.env.AGENTMESH_LLM_BASE_URL
      ? `model endpoint ${process.env.AGENTMESH_LLM_BASE_URL}`
      : "no AGENTMESH_LLM_BASE_URL: using the offline engine",
  );
  await startLocalServices(env, started);
  return env;
}
