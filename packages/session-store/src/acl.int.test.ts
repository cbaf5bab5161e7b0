import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Redis } from "ioredis";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { createAclUsers, dropPrefix } from "../../../test/setup/redis.js";
import { REDIS_USER_KINDS, type RedisUserKind } from "./acl.js";
import { checkDurability, connectRedis } from "./connect.js";
import { createRedisSessionStore } from "./redis.js";
import { runSessionStoreConformance, testCommit, testSessionState } from "./testing.js";

const redisUrl = inject("redisUrl");
const STORE_TTLS = { activeTtlMs: 60_000, finishedTtlMs: 60_000, idempotencyTtlMs: 60_000 };

/** The admin connection (the test server's default user), for ACL SETUSER/DELUSER and cleanup only. */
let admin: Redis;
const created: string[] = [];

/** Asserts the server refuses the command with NOPERM. */
async function denied(r: Redis, ...cmd: [string, ...Array<string | number>]): Promise<void> {
  await expect(r.call(...cmd), cmd.join(" ")).rejects.toThrow(/NOPERM/);
}

beforeAll(async () => {
  admin = await connectRedis(redisUrl, { name: "acl-int-admin" });
});

afterAll(async () => {
  if (created.length) await admin.call("ACL", "DELUSER", ...created);
  await admin.quit();
});

// The whole session-store conformance suite, run as the generated coordinator user: it can do
// everything the coordinator does (scripts included, since Redis checks a script's calls too).
runSessionStoreConformance("redis as the generated coordinator ACL user", async (opts) => {
  const keyPrefix = uniquePrefix("acl");
  const { coordinator } = await createAclUsers(admin, redisUrl, keyPrefix, ["coordinator"], created);
  const redis = await connectRedis(coordinator.url, { name: "acl-conformance" });
  const store = createRedisSessionStore(redis, { ...opts, keyPrefix });
  return {
    store,
    async cleanup() {
      await store.close();
      await redis.quit();
      await dropPrefix(admin, keyPrefix);
    },
  };
});

describe("Redis ACL users per service kind, on the real server", () => {
  const prefix = uniquePrefix("acl");
  const other = uniquePrefix("acl");
  const sid = `acl${randomBytes(8).toString("hex")}`;
  let users: Record<RedisUserKind, { name: string; url: string }>;
  const clients: Partial<Record<RedisUserKind, Redis>> = {};
  const client = (k: RedisUserKind): Redis => {
    const c = clients[k];
    if (!c) throw new Error(`no ${k} client`);
    return c;
  };

  beforeAll(async () => {
    users = await createAclUsers(admin, redisUrl, prefix, REDIS_USER_KINDS, created);
    for (const k of REDIS_USER_KINDS) clients[k] = await connectRedis(users[k].url, { name: `acl-${k}` });
    await admin.set(`${other}:s:{${sid}}:state`, "x");
    await admin.set(`${other}:thread:1`, "x");
  });

  afterAll(async () => {
    for (const c of Object.values(clients)) await c.quit();
    await dropPrefix(admin, prefix);
    await dropPrefix(admin, other);
  });

  it("the coordinator writes sessions under its prefix, reads its durability settings, and nothing else", async () => {
    const r = client("coordinator");
    const store = createRedisSessionStore(r, { keyPrefix: prefix, ...STORE_TTLS });
    const s0 = testSessionState(sid);
    expect(await store.claimIdempotencyKey(`k-${sid}`, sid)).toBe(sid);
    expect(await store.create(s0)).toBe(true);
    expect((await store.commit(testCommit(s0, "in-1", { timers: [{ member: `t:${sid}`, dueAt: 1 }] }))).ok).toBe(true);
    expect(await store.claimDueTimers(Date.now(), 10)).toContain(`t:${sid}`);
    expect(await store.listSessions(10)).toContain(sid);
    expect((await checkDurability(r)).configAvailable).toBe(true);
    expect(await store.peekIdempotencyKey(`k-${sid}`)).toBe(sid);
    expect((await store.attachToThread("thread-acl-1", "alice", sid, 1)).ok).toBe(true);
    expect((await store.loadThread("thread-acl-1"))?.sessions).toEqual([sid]);
    // the replica wait after a commit (no replicas here: 0 of 0 asked, answered at once)
    expect(await r.call("WAIT", 0, 100)).toBe(0);
    await createRedisSessionStore(r, { keyPrefix: prefix, ...STORE_TTLS, waitReplicas: 1, waitTimeoutMs: 50 })
      .awaitReplicas()
      .then(
        () => expect.fail("no replica can confirm"),
        (err: Error) => expect(err.message).toMatch(/only 0 of 1 Redis replicas confirmed/),
      );

    // another prefix: neither directly nor from a script
    await denied(r, "GET", `${other}:s:{${sid}}:state`);
    await denied(r, "HSET", `${other}:s:{${sid}}:state`, "a", "b");
    await denied(r, "EVAL", "return redis.call('SET', KEYS[1], 'x')", 1, `${other}:s:{${sid}}:state`);
    await expect(createRedisSessionStore(r, { keyPrefix: other, ...STORE_TTLS }).load(sid)).rejects.toThrow(/NOPERM/);
    // the gateway's keys under its own prefix
    await denied(r, "INCR", `${prefix}:rl:x`);
    await denied(r, "ZADD", `${prefix}:rl:x`, 1, "y");
    // server-wide and dangerous commands
    await denied(r, "FLUSHALL");
    await denied(r, "FLUSHDB");
    await denied(r, "CONFIG", "SET", "appendonly", "no");
    await denied(r, "CONFIG", "REWRITE");
    await denied(r, "KEYS", "*");
    await denied(r, "ACL", "LIST");
    await denied(r, "CLIENT", "LIST");
    await denied(r, "SCRIPT", "FLUSH");
    await denied(r, "PUBLISH", "x", "y");
    await denied(r, "MIGRATE", "127.0.0.1", "1", "", "0", "1", "KEYS", `${prefix}:timers`);
  });

  it("inspect reads every key of its prefix (agentmesh inspect/sessions) and writes nothing", async () => {
    const r = client("inspect");
    const store = createRedisSessionStore(r, { keyPrefix: prefix, ...STORE_TTLS });
    expect((await store.load(sid))?.state.meta.version).toBe(1);
    expect(await store.transitionLog(sid)).toHaveLength(1);
    expect(await store.listSessions(10)).toContain(sid);
    await denied(r, "HSET", `${prefix}:s:{${sid}}:state`, "version", "9");
    await denied(r, "DEL", `${prefix}:s:{${sid}}:state`);
    await denied(r, "SET", `${prefix}:thread:1`, "x");
    await denied(r, "EVAL", "return redis.call('DEL', KEYS[1])", 1, `${prefix}:s:{${sid}}:state`);
    await expect(store.create(testSessionState(`${sid}b`))).rejects.toThrow(/NOPERM/);
    await denied(r, "GET", `${other}:s:{${sid}}:state`);
    await denied(r, "FLUSHALL");
    await denied(r, "CONFIG", "GET", "requirepass");
    await denied(r, "ACL", "WHOAMI");
  });

  it("the gateway reads sessions and threads and writes only its rate limits", async () => {
    const r = client("gateway");
    expect(await r.hmget(`${prefix}:s:{${sid}}:state`, "version")).toEqual(["1"]);
    const store = createRedisSessionStore(r, { keyPrefix: prefix, ...STORE_TTLS });
    expect((await store.loadThread("thread-acl-1"))?.owner).toBe("alice");
    expect((await store.load(sid))?.state.meta.version).toBe(1);
    await expect(store.attachToThread("thread-acl-1", "alice", `${sid}b`, 2)).rejects.toThrow(/NOPERM/);
    await denied(r, "SET", `${prefix}:thread:t1`, "{}");
    await denied(r, "RPUSH", `${prefix}:thread:{thread-acl-1}:sessions`, "x");
    expect(await r.incr(`${prefix}:rl:client-a`)).toBe(1);
    expect(await r.pexpire(`${prefix}:rl:client-a`, 1000)).toBe(1);
    await denied(r, "HSET", `${prefix}:s:{${sid}}:state`, "version", "9");
    await denied(r, "SET", `${prefix}:idem:k`, sid);
    await denied(r, "ZADD", `${prefix}:timers`, 1, "x");
    await denied(r, "SET", `${other}:thread:1`, "y");
    await denied(r, "GET", `${other}:s:{${sid}}:state`);
    await denied(r, "FLUSHALL");
    await denied(r, "CONFIG", "GET", "*");
  });

  it("a wrong password is refused with a clear error that does not show it", async () => {
    const bad = users.inspect.url.replace(/:[0-9a-f]{24}@/, ":wrong-password-31337@");
    const err = await connectRedis(bad, { name: "acl-bad", connectTimeoutMs: 2000 }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/refused our credentials/);
    expect((err as Error).message).not.toContain("31337");
  });
});
