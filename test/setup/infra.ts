import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the test run's NATS and Redis came from, and how to stop what we started. */
export interface Infra {
  readonly natsUrl: string;
  readonly redisUrl: string;
  readonly source: "env" | "testcontainers" | "native";
  /** Restarts of the native servers, for fault tests (null when not native). */
  readonly native: NativeServers | null;
  stop(): Promise<void>;
}

export interface NativeServers {
  readonly natsPort: number;
  readonly redisPort: number;
  readonly natsDir: string;
  readonly redisDir: string;
}

/** The entries of a URL or a comma-separated list of them (a NATS cluster's NATS_URL), each with a scheme. */
export function urlList(url: string): string[] {
  return url
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((s) => (s.includes("://") ? s : `nats://${s}`));
}

/** Only loopback addresses are ever used by tests. */
function assertLoopback(url: string): void {
  for (const one of urlList(url)) {
    const host = new URL(one).hostname;
    if (!["127.0.0.1", "localhost", "::1", "[::1]"].includes(host)) {
      throw new Error(`refusing non-loopback test server ${one}: tests talk only to 127.0.0.1/localhost`);
    }
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Whether a TCP connect to the URL's host:port (to any server of a list) succeeds within `ms`. */
export async function reachable(url: string, ms = 1000): Promise<boolean> {
  const all = urlList(url);
  if (all.length > 1) return (await Promise.all(all.map((one) => reachable(one, ms)))).some(Boolean);
  const u = new URL(all[0] ?? url);
  const port = Number(u.port || (u.protocol.startsWith("redis") ? 6379 : 4222));
  return new Promise((resolve) => {
    const sock = createConnection({ host: u.hostname, port });
    const t = setTimeout(() => {
      sock.destroy();
      resolve(false);
    }, ms);
    sock.once("connect", () => {
      clearTimeout(t);
      sock.end();
      resolve(true);
    });
    sock.once("error", () => {
      clearTimeout(t);
      resolve(false);
    });
  });
}

export function waitForLine(p: ChildProcess, re: RegExp, ms = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const t = setTimeout(() => reject(new Error(`timed out waiting for ${re} (output: ${buf.slice(-500)})`)), ms);
    const on = (b: Buffer) => {
      buf += b.toString();
      if (re.test(buf)) {
        clearTimeout(t);
        resolve();
      }
    };
    p.stdout?.on("data", on);
    p.stderr?.on("data", on);
    p.once("error", (e) => {
      clearTimeout(t);
      reject(e);
    });
    p.once("exit", (c) => {
      clearTimeout(t);
      reject(new Error(`exited with ${c}: ${buf.slice(-500)}`));
    });
  });
}

/**
 * The environment nats-server runs with wherever we start it (compose and the NATS chart values
 * set the same; test/unit/memory-defaults.test.ts checks): Go's garbage collector at GOGC=50, so the heap
 * grows to 1.5 × its live part between collections instead of 2 × (10,000 concurrent sessions:
 * bench/README.md).
 */
export const NATS_SERVER_ENV = { GOGC: "50" } as const;

/**
 * The nats-server binary the tests start: NATS_SERVER_BIN (the preflight sets it to a 2.10 or newer
 * one, docs/preflight.md), else the first `nats-server` on PATH or in /usr/sbin; null when there is none.
 */
export function natsServerBinary(): string | null {
  const candidates = [
    process.env.NATS_SERVER_BIN,
    "nats-server",
    "/usr/sbin/nats-server",
    "/usr/local/bin/nats-server",
  ].filter((c): c is string => Boolean(c));
  for (const c of candidates) if (natsServerVersion(c) !== null) return c;
  return null;
}

/** The version a nats-server binary reports, as [major, minor, patch]; null when it does not run. */
export function natsServerVersion(bin: string): [number, number, number] | null {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  const m = r.status === 0 ? /(\d+)\.(\d+)\.(\d+)/.exec(r.stdout) : null;
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** Starts nats-server (JetStream, file store) on a given port and dir; resolves when ready. */
export async function startNats(port: number, dir: string): Promise<ChildProcess> {
  const p = spawn(natsServerBinary() ?? "nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], {
    env: { ...process.env, ...NATS_SERVER_ENV },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await waitForLine(p, /Server is ready/);
  return p;
}

/** Starts redis-server in `dir` (by default AOF with appendfsync always); resolves when ready. */
export async function startRedis(
  port: number,
  dir: string,
  persistence: readonly string[] = ["--appendonly", "yes", "--appendfsync", "always"],
): Promise<ChildProcess> {
  const p = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", ...persistence],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  await waitForLine(p, /Ready to accept connections/);
  return p;
}

async function viaContainers(): Promise<Infra> {
  const { NatsContainer } = await import("@testcontainers/nats");
  const { RedisContainer } = await import("@testcontainers/redis");
  const n = await new NatsContainer("nats:2.10-alpine").withJetStream().start();
  const r = await new RedisContainer("redis:7-alpine").start();
  const o = n.getConnectionOptions() as { servers: string; user: string; pass: string };
  return {
    natsUrl: `nats://${o.user}:${o.pass}@${String(o.servers)}`,
    redisUrl: r.getConnectionUrl(),
    source: "testcontainers",
    native: null,
    async stop() {
      await n.stop();
      await r.stop();
    },
  };
}

async function viaNative(): Promise<Infra> {
  const natsPort = await freePort();
  const redisPort = await freePort();
  const natsDir = mkdtempSync(join(tmpdir(), "agentmesh-nats-"));
  const redisDir = mkdtempSync(join(tmpdir(), "agentmesh-redis-"));
  let nats: ChildProcess;
  let redis: ChildProcess;
  try {
    nats = await startNats(natsPort, natsDir);
    redis = await startRedis(redisPort, redisDir);
  } catch (e) {
    throw new Error(
      `no NATS/Redis for integration tests: set NATS_URL and REDIS_URL, run a Docker engine for testcontainers, ` +
        `or install the nats-server and redis-server binaries (apt-get install nats-server redis-server). Cause: ${(e as Error).message}`,
    );
  }
  return {
    natsUrl: `nats://127.0.0.1:${natsPort}`,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    source: "native",
    native: { natsPort, redisPort, natsDir, redisDir },
    async stop() {
      nats.kill("SIGTERM");
      redis.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 200));
      rmSync(natsDir, { recursive: true, force: true });
      rmSync(redisDir, { recursive: true, force: true });
    },
  };
}

/**
 * Resolves the test infrastructure: NATS_URL/REDIS_URL when set and reachable, else
 * testcontainers where a Docker engine exists, else native binaries on free ports.
 * Never a local twin.
 */
export async function resolveInfra(env: NodeJS.ProcessEnv = process.env): Promise<Infra> {
  const natsUrl = env.NATS_URL;
  const redisUrl = env.REDIS_URL;
  if (natsUrl && redisUrl) {
    assertLoopback(natsUrl);
    assertLoopback(redisUrl);
    if ((await reachable(natsUrl)) && (await reachable(redisUrl))) {
      return { natsUrl, redisUrl, source: "env", native: null, async stop() {} };
    }
    console.warn(`[infra] NATS_URL/REDIS_URL set but not reachable (${natsUrl}, ${redisUrl}); trying other sources`);
  }
  try {
    return await viaContainers();
  } catch (e) {
    console.warn(`[infra] testcontainers unavailable (${(e as Error).message.split("\n")[0]}); using native binaries`);
  }
  return viaNative();
}
