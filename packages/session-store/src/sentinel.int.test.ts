import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import type { Redis } from "ioredis";
import { freePort, waitForLine } from "../../../test/setup/infra.js";
import { startRedisTopology, type RedisTopology } from "../../../test/setup/redis-topology.js";
import { startRedisChaos, type RedisChaos } from "../../../test/setup/redis-chaos.js";
import { sentinelClientRules } from "./acl.js";
import { connectRedis, type RedisSentinelOptions } from "./connect.js";
import { createReplicaWait } from "./replicas.js";

// Redis servers of their own on free loopback ports: a primary with a replica behind three
// sentinels, and a node in cluster mode (which agentmesh refuses).

let topology: RedisTopology | null = null;
let chaos: RedisChaos | null = null;
const clients: Redis[] = [];
const others: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  await topology?.stop();
  topology = null;
  await chaos?.stop();
  chaos = null;
  for (const p of others.splice(0)) p.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sentinelsOf = (t: RedisTopology, password?: string): RedisSentinelOptions => ({
  sentinels: t.sentinelPorts.map((port) => ({ host: "127.0.0.1", port })),
  masterName: t.masterName,
  ...(password === undefined ? {} : { password }),
});

/** Writes until a write succeeds, returning how long that took (the client's view of a failover). */
async function firstWriteMs(redis: Redis, key: string, ms = 30_000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    try {
      await redis.set(key, String(Date.now()));
      return Date.now() - t0;
    } catch (err) {
      if (Date.now() - t0 > ms) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

describe("Redis behind Sentinel", () => {
  test("the client finds the primary through the sentinels, follows a failover, and keeps writing to whoever is primary", async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3 });
    const [first, second] = topology.nodes;
    if (!first || !second) throw new Error("no topology");
    // the URL's host is not used: the sentinels name the primary
    const redis = await connectRedis("redis://127.0.0.1:1", {
      name: "sentinel-int",
      sentinel: sentinelsOf(topology),
    });
    clients.push(redis);
    await redis.set("k", "before");
    expect(await topology.client(first).get("k")).toBe("before");

    await topology.signal(first, "SIGKILL");
    // writes from the kill on: they fail until the client is on the promoted replica
    const writing = firstWriteMs(redis, "k");
    const { primary, ms: promotedMs } = await topology.awaitFailover(first);
    expect(primary).toBe(second);
    const writeMs = await writing;
    expect(await topology.client(second).get("k")).not.toBe("before");
    // the old primary comes back and the sentinels make it a replica of the new one
    const back = Date.now();
    await topology.restart(first);
    await topology.awaitInSync(first);
    const rejoinMs = Date.now() - back;
    await redis.set("k", "after");
    await topology.awaitInSync(first);
    expect(await topology.client(first).get("k")).toBe("after");
    console.log(
      `[sentinel] primary killed: the sentinels named the replica after ${promotedMs} ms, the client wrote again ${writeMs} ms after the kill; the old primary, started again, was an in-sync replica ${rejoinMs} ms later`,
    );
  });

  test("a start during a failover waits for the new primary instead of failing on the dead one", async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3 });
    const [first, second] = topology.nodes;
    if (!first || !second) throw new Error("no topology");
    await topology.signal(first, "SIGKILL");
    // the sentinels still name the dead primary for about a second (down-after), then elect
    const t0 = Date.now();
    const redis = await connectRedis("redis://127.0.0.1:1", {
      name: "sentinel-start",
      sentinel: sentinelsOf(topology),
    });
    clients.push(redis);
    const ms = Date.now() - t0;
    expect(await redis.set("k", "written")).toBe("OK");
    expect(await topology.client(second).get("k")).toBe("written");
    // it waited for the promotion: the dead primary refused every try before it
    expect(ms).toBeGreaterThan(500);
    // and one node that is down still fails at once, as before
    const down = await freePort();
    const t1 = Date.now();
    await expect(connectRedis(`redis://127.0.0.1:${down}`, { name: "single-down" })).rejects.toThrow(
      /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/,
    );
    expect(Date.now() - t1).toBeLessThan(2000);
    console.log(`[sentinel] a start during a failover connected to the promoted replica after ${ms} ms`);
  });

  test("the sentinels' own password: connects with it, refused without it", async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3, sentinelPassword: "sentinel-pw-4711" });
    const redis = await connectRedis("redis://127.0.0.1:1", {
      name: "sentinel-auth",
      sentinel: sentinelsOf(topology, "sentinel-pw-4711"),
    });
    clients.push(redis);
    expect(await redis.ping()).toBe("PONG");
    await expect(
      connectRedis("redis://127.0.0.1:1", {
        name: "sentinel-noauth",
        connectTimeoutMs: 2000,
        sentinel: sentinelsOf(topology),
      }),
    ).rejects.toThrow(/cannot reach Redis at primary "agentmesh" of sentinels|refused our credentials/);
  });

  test("the sentinels' ACL user for agentmesh's clients: enough to find and follow the primary, nothing more", async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3 });
    for (const port of topology.sentinelPorts) {
      const s = topology.sentinelClient(port);
      await s.call("ACL", "SETUSER", "agentmesh-client", "reset", "on", ">client-pw-0815", ...sentinelClientRules());
    }
    const login = { ...sentinelsOf(topology, "client-pw-0815"), username: "agentmesh-client" };
    const redis = await connectRedis("redis://127.0.0.1:1", { name: "sentinel-acl", sentinel: login });
    clients.push(redis);
    expect(await redis.ping()).toBe("PONG");
    const [port] = topology.sentinelPorts;
    const asClient = topology.sentinelClient(port ?? 0, { username: "agentmesh-client", password: "client-pw-0815" });
    expect(await asClient.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", topology.masterName)).toEqual([
      "127.0.0.1",
      String(topology.nodes[0]?.port),
    ]);
    for (const denied of [
      ["SENTINEL", "FAILOVER", topology.masterName],
      ["SENTINEL", "SET", topology.masterName, "quorum", "1"],
      ["SENTINEL", "REMOVE", topology.masterName],
      ["ACL", "LIST"],
    ])
      await expect(asClient.call(denied[0] ?? "", ...denied.slice(1))).rejects.toThrow(/NOPERM/);
    await expect(asClient.subscribe("__sentinel__:hello")).rejects.toThrow(/NOPERM/);
    expect(await asClient.subscribe("+switch-master")).toBe(1);
  });
});

describe("the chaos run's Redis part", () => {
  test("writes confirmed by the replica wait under load: none lost through a SIGKILLed primary and its rejoin", async () => {
    chaos = await startRedisChaos({ replicas: 2, waitReplicas: 1 });
    const t = chaos.topology;
    const redis = await connectRedis("redis://127.0.0.1:1", { name: "chaos-load", sentinel: sentinelsOf(t) });
    clients.push(redis);
    const awaitReplicas = createReplicaWait(redis, 1, 1000);
    const confirmed: number[] = [];
    let failed = 0;
    let running = true;
    const load = (async () => {
      for (let i = 0; running; i++) {
        try {
          await redis.set(`chaos:${i}`, String(i));
          await awaitReplicas();
          confirmed.push(i);
        } catch {
          failed++;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    let killed = 0;
    const rows = await chaos.run({
      killCoordinator: async () => {
        killed++;
      },
      progress: () => confirmed.length,
    });
    const before = confirmed.length;
    await new Promise((r) => setTimeout(r, 500));
    running = false;
    await load;
    expect(confirmed.length).toBeGreaterThan(before);
    expect(killed).toBe(1);
    expect(rows.map((r) => r.fault)).toEqual([
      "primary SIGKILLed, a coordinator killed during the failover",
      "old primary restarted, rejoins as a replica",
    ]);
    // every write the wait confirmed is on the primary the run ended with
    const primary = t.client(await t.primary());
    const values = await primary.mget(...confirmed.map((i) => `chaos:${i}`));
    expect(values.filter((v) => v === null)).toEqual([]);
    console.log(
      `[chaos-redis] ${confirmed.length} confirmed writes, ${failed} failed and retried, none lost; ${rows.map((r) => `${r.fault}: promoted ${r.promotedMs ?? "-"} ms, longest stall ${r.longestStallMs} ms, rejoin ${r.rejoinMs ?? "-"} ms`).join("; ")}`,
    );
    // the run's own waits bound it: the failover, up to 60 s for the new primary to answer, up to
    // 60 s for the old one to be in sync again
  }, 150_000);
});

describe("Redis Cluster is refused", () => {
  test("a node in cluster mode: the start fails saying why and what to use instead", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentmesh-redis-cluster-"));
    dirs.push(dir);
    const port = await freePort();
    const p = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--cluster-enabled", "yes"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    others.push(p);
    await waitForLine(p, /Ready to accept connections/);
    const err = await connectRedis(`redis://127.0.0.1:${port}`, { name: "cluster-int" }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/runs in cluster mode, which agentmesh does not support/);
    expect(err?.message).toMatch(
      /the timer set and the idempotency keys, and those live in other hash slots than the session's/,
    );
    expect(err?.message).toMatch(/Redis Sentinel \(REDIS_SENTINELS\)/);
    expect(err).toMatchObject({ code: "invalid_config", retryable: false });
  });
});
