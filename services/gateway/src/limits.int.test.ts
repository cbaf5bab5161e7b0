import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Redis } from "ioredis";
import { connectRedis } from "@agentmesh/session-store";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { createAclUsers, dropPrefix } from "../../../test/setup/redis.js";
import { createRedisLimits, type IsLive, type LimitsOptions } from "./limits.js";
import { runLimitsConformance } from "./testing.js";

const redisUrl = inject("redisUrl");

/** The admin connection (the test server's default user): ACL SETUSER/DELUSER and cleanup. */
let admin: Redis;
const users: string[] = [];

beforeAll(async () => {
  admin = await connectRedis(redisUrl, { name: "gateway-limits-admin" });
});

afterAll(async () => {
  if (users.length) await admin.call("ACL", "DELUSER", ...users);
  await admin.quit();
});

/** Creates the generated gateway ACL user of `prefix` on the server (its rendered line, verbatim) and connects as it. */
async function connectAsGateway(prefix: string): Promise<Redis> {
  const { gateway } = await createAclUsers(admin, redisUrl, prefix, ["gateway"], users);
  return connectRedis(gateway.url, { name: "gateway-limits-acl" });
}

const live: IsLive = () => Promise.resolve(true);

runLimitsConformance("redis", async (opts) => {
  const keyPrefix = uniquePrefix("gwl");
  const redis = await connectRedis(redisUrl, { name: "gateway-limits-conformance" });
  return {
    limits: createRedisLimits(redis, { ...opts, keyPrefix }),
    async cleanup() {
      await redis.quit();
      await dropPrefix(admin, keyPrefix);
    },
  };
});

// The whole suite again as the generated gateway user: Redis checks a script's calls against the
// caller's ACL, so this proves the user may run everything the limits send and their scripts call.
runLimitsConformance("redis as the generated gateway ACL user", async (opts) => {
  const keyPrefix = uniquePrefix("gwl");
  const redis = await connectAsGateway(keyPrefix);
  return {
    limits: createRedisLimits(redis, { ...opts, keyPrefix }),
    async cleanup() {
      await redis.quit();
      await dropPrefix(admin, keyPrefix);
    },
  };
});

describe("redis gateway limits across replicas", () => {
  const replicas: Redis[] = [];
  const prefixes: string[] = [];
  const limitsOf = (over: Partial<LimitsOptions>) => {
    const keyPrefix = uniquePrefix("gwl");
    prefixes.push(keyPrefix);
    const opts = {
      keyPrefix,
      rateLimit: 10,
      rateWindowMs: 10_000,
      maxConcurrentSessions: 5,
      sessionTtlMs: 60_000,
      ...over,
    };
    return replicas.map((r) => createRedisLimits(r, opts));
  };

  beforeAll(async () => {
    for (const n of [1, 2]) replicas.push(await connectRedis(redisUrl, { name: `gateway-limits-replica-${n}` }));
  });

  afterAll(async () => {
    for (const r of replicas) await r.quit();
    for (const p of prefixes) await dropPrefix(admin, p);
  });

  it("two replicas firing together allow exactly the limit and refuse the rest with a retry-after", async () => {
    const [a, b] = limitsOf({ rateLimit: 10, rateWindowMs: 10_000 });
    if (!a || !b) throw new Error("two replicas");
    const ds = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).allowRequest("alice")));
    expect(ds.filter((d) => d.allowed)).toHaveLength(10);
    const waits = ds.flatMap((d) => (d.allowed ? [] : [d.retryAfterMs]));
    expect(waits).toHaveLength(30);
    for (const w of waits) {
      expect(w).toBeGreaterThan(9_000);
      expect(w).toBeLessThanOrEqual(10_000);
    }
    expect((await b.allowRequest("bob")).allowed).toBe(true);
  });

  it("two replicas racing twice the maximum of admissions take exactly the maximum of slots", async () => {
    const [a, b] = limitsOf({ maxConcurrentSessions: 5 });
    if (!a || !b) throw new Error("two replicas");
    for (const owner of ["alice", "bob", "carol"]) {
      const rs = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).admit(owner, `${owner}-${i}`, live)),
      );
      expect(
        rs.filter((r) => r.ok),
        owner,
      ).toHaveLength(5);
      expect(rs.filter((r) => !r.ok)).toEqual(Array.from({ length: 5 }, () => ({ ok: false, count: 5, max: 5 })));
    }
  });

  it("a replica reclaims the slots of sessions that ended without a release (their replica crashed)", async () => {
    const [a, b] = limitsOf({ maxConcurrentSessions: 3 });
    if (!a || !b) throw new Error("two replicas");
    for (const sid of ["s1", "s2", "s3"]) expect(await a.admit("alice", sid, live)).toEqual({ ok: true });
    const ended = new Set(["s1", "s3"]);
    const isLive: IsLive = (sid) => Promise.resolve(!ended.has(sid));
    expect(await b.admit("alice", "s4", isLive)).toEqual({ ok: true });
    expect(await a.admit("alice", "s5", isLive)).toEqual({ ok: true });
    expect(await b.admit("alice", "s6", isLive)).toEqual({ ok: false, count: 3, max: 3 });
    await a.release("alice", "s2");
    expect(await b.admit("alice", "s6", isLive)).toEqual({ ok: true });
  });

  it("keeps its keys under <prefix>:rl:, each expiring", async () => {
    const [a] = limitsOf({ rateWindowMs: 5_000, sessionTtlMs: 20_000 });
    if (!a) throw new Error("a replica");
    await a.allowRequest("alice");
    await a.admit("alice", "s1", live);
    const p = prefixes.at(-1) ?? "";
    const keys: string[] = [];
    let cursor = "0";
    do {
      // One SCAN call covers only part of a shared server's keyspace: follow the cursor to 0.
      const [next, found] = await admin.scan(cursor, "MATCH", `${p}:*`, "COUNT", 1000);
      keys.push(...found);
      cursor = next;
    } while (cursor !== "0");
    expect(keys.sort()).toEqual([`${p}:rl:req:alice`, `${p}:rl:sessions:alice`]);
    const req = await admin.pttl(`${p}:rl:req:alice`);
    const sessions = await admin.pttl(`${p}:rl:sessions:alice`);
    expect(req).toBeGreaterThan(4_000);
    expect(req).toBeLessThanOrEqual(5_000);
    expect(sessions).toBeGreaterThan(19_000);
    expect(sessions).toBeLessThanOrEqual(20_000);
  });
});

describe("the generated gateway ACL user and the limits", () => {
  it("may keep limits under its own prefix only", async () => {
    const own = uniquePrefix("gwl");
    const other = uniquePrefix("gwl");
    const redis = await connectAsGateway(own);
    try {
      const opts = { rateLimit: 1, rateWindowMs: 1000, maxConcurrentSessions: 1, sessionTtlMs: 1000 };
      expect((await createRedisLimits(redis, { ...opts, keyPrefix: own }).allowRequest("alice")).allowed).toBe(true);
      const foreign = createRedisLimits(redis, { ...opts, keyPrefix: other });
      await expect(foreign.allowRequest("alice")).rejects.toThrow(/NOPERM/);
      await expect(foreign.admit("alice", "s1", live)).rejects.toThrow(/NOPERM/);
      await expect(foreign.release("alice", "s1")).rejects.toThrow(/NOPERM/);
      expect(await admin.exists(`${other}:rl:req:alice`, `${other}:rl:sessions:alice`)).toBe(0);
    } finally {
      await redis.quit();
      await dropPrefix(admin, own);
    }
  });
});
