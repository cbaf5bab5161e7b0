/**
 * The production Redis of deploy/overlays/prod/redis-sentinel.yaml, run on loopback with the real
 * binaries: a primary and a replica with the ConfigMap's redis.conf and the ACL file
 * `pnpm redis:acl --sentinel` writes, three Sentinels with the configuration start-sentinel.sh
 * writes (host names and ports made local). Then the primary is killed and the Sentinels must
 * promote the replica, logging in as the `sentinel` user. A directive Redis 7 does not know, an
 * ACL rule that stops replication or failover, or a quorum that cannot be reached fails here.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { renderAclFile, REDIS_USER_KINDS } from "@agentmesh/session-store";
import { topologyAclLines } from "../../scripts/redis-acl.js";
import { freePort, waitForLine } from "../setup/infra.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const manifest = parseAllDocuments(readFileSync(join(ROOT, "deploy/overlays/prod/redis-sentinel.yaml"), "utf8")).map(
  (d) => d.toJS() as { kind?: string; metadata?: { name?: string }; data?: Record<string, string> },
);
const data = manifest.find((o) => o.kind === "ConfigMap" && o.metadata?.name === "redis-config")?.data ?? {};
const PASSWORD = { replica: "replica-pw", sentinel: "sentinel-pw", coordinator: "coordinator-pw" };

let dir: string;
const processes: ChildProcess[] = [];
const clients: Redis[] = [];
let ports: { primary: number; replica: number; sentinels: number[] };

function client(port: number, user?: keyof typeof PASSWORD): Redis {
  const c = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    ...(user ? { username: user, password: PASSWORD[user] } : {}),
  });
  // the clients of the killed primary see their connection refused: expected, not a failure
  c.on("error", () => undefined);
  clients.push(c);
  return c;
}

async function start(args: string[], ready: RegExp): Promise<ChildProcess> {
  const p = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  processes.push(p);
  await waitForLine(p, ready);
  return p;
}

/** The ConfigMap's redis.conf for one local instance, with the lines start-redis.sh appends. */
function redisConf(name: string, port: number, primaryPort: number | null): string {
  const instance = join(dir, name);
  mkdirSync(instance);
  const conf = (data["redis.conf"] ?? "")
    .replace(/^port 6379$/m, `port ${port}\nbind 127.0.0.1\nsave ""`)
    .replace(/^dir \/data$/m, `dir ${instance}`)
    .replace(/^aclfile \/etc\/redis-acl\/users\.acl$/m, `aclfile ${join(dir, "users.acl")}`);
  const appended = [
    `masterauth ${PASSWORD.replica}`,
    "replica-announce-ip 127.0.0.1",
    ...(primaryPort ? [`replicaof 127.0.0.1 ${primaryPort}`] : []),
  ];
  const path = join(instance, "redis.conf");
  writeFileSync(path, `${conf}\n${appended.join("\n")}\n`);
  return path;
}

/** The configuration start-sentinel.sh writes (its heredoc), for a local Sentinel. */
function sentinelConf(i: number, port: number): string {
  const body = /<<CONF\n([\s\S]*?)\nCONF\n/.exec(data["start-sentinel.sh"] ?? "")?.[1];
  if (!body) throw new Error("start-sentinel.sh writes no configuration");
  const conf = body
    .replace(/^port 26379$/m, `port ${port}\nbind 127.0.0.1`)
    .replace(/\$self/g, "127.0.0.1")
    .replace(/\$primary 6379/g, `127.0.0.1 ${ports.primary}`)
    .replace(/\$SENTINEL_PASSWORD/g, PASSWORD.sentinel);
  const instance = join(dir, `sentinel-${i}`);
  mkdirSync(instance);
  const path = join(instance, "sentinel.conf");
  writeFileSync(path, `${conf}\ndir ${instance}\n`);
  return path;
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentmesh-sentinel-"));
  ports = {
    primary: await freePort(),
    replica: await freePort(),
    sentinels: [await freePort(), await freePort(), await freePort()],
  };
  const acl = renderAclFile(
    "agentmesh",
    REDIS_USER_KINDS.map((kind) => (kind === "coordinator" ? { kind, password: PASSWORD.coordinator } : { kind })),
  );
  writeFileSync(join(dir, "users.acl"), `${acl}${topologyAclLines(PASSWORD).join("\n")}\n`);
  await start([redisConf("primary", ports.primary, null)], /Ready to accept connections/);
  await start([redisConf("replica", ports.replica, ports.primary)], /Ready to accept connections/);
  for (const [i, port] of ports.sentinels.entries())
    await start([sentinelConf(i, port), "--sentinel"], /Sentinel ID is|monitor master/);
}, 30_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const p of processes) p.kill("SIGKILL");
  await new Promise((r) => setTimeout(r, 200));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("Redis with Sentinel, as the prod overlay runs it", () => {
  it("the replica follows the primary, logged in as `replica`", async () => {
    const info = await until("replication link up", 15_000, async () => {
      const text = await client(ports.replica, "sentinel").info("replication");
      return /master_link_status:up/.test(text) ? text : null;
    });
    expect(info).toMatch(/role:slave/);
    // and the replication user may do nothing else
    await expect(client(ports.primary, "replica").get("agentmesh:idem:x")).rejects.toThrow(/NOPERM/);
  });

  it("three Sentinels agree on the primary, see the replica and each other, and have a quorum", async () => {
    const sentinel = client(ports.sentinels[0] ?? 0);
    await until("sentinels know each other and the replica", 20_000, async () => {
      const others = (await sentinel.call("SENTINEL", "SENTINELS", "agentmesh")) as unknown[];
      const replicas = (await sentinel.call("SENTINEL", "REPLICAS", "agentmesh")) as unknown[];
      return others.length === 2 && replicas.length === 1 ? true : null;
    });
    for (const port of ports.sentinels)
      expect(await client(port).call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "agentmesh")).toEqual([
        "127.0.0.1",
        String(ports.primary),
      ]);
    expect(await sentinel.call("SENTINEL", "CKQUORUM", "agentmesh")).toMatch(/^OK 3 usable Sentinels/);
  });

  it("the primary killed, the Sentinels promote the replica, which keeps the durability settings the coordinator checks as its own user", async () => {
    const primary = processes[0];
    primary?.kill("SIGKILL");
    const t0 = Date.now();
    const sentinel = client(ports.sentinels[1] ?? 0);
    await until("failover to the replica", 45_000, async () => {
      const addr = (await sentinel.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "agentmesh")) as string[];
      return addr[1] === String(ports.replica) ? addr : null;
    });
    console.info(`[redis-sentinel] failover to the replica after ${Date.now() - t0} ms (down-after 5000 ms)`);
    const coordinator = client(ports.replica, "coordinator");
    await until("the replica is a primary", 15_000, async () =>
      ((await client(ports.replica, "sentinel").call("ROLE")) as unknown[])[0] === "master" ? true : null,
    );
    expect(await coordinator.call("CONFIG", "GET", "appendonly")).toEqual(["appendonly", "yes"]);
    expect(await coordinator.call("CONFIG", "GET", "appendfsync")).toEqual(["appendfsync", "always"]);
    expect(await coordinator.call("CONFIG", "GET", "maxmemory-policy")).toEqual(["maxmemory-policy", "noeviction"]);
  }, 60_000);
});
