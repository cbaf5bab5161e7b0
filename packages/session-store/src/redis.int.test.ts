import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Redis } from "ioredis";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { freePort } from "../../../test/setup/infra.js";
import { dropPrefix } from "../../../test/setup/redis.js";
import { AgentmeshError, STATE_SCHEMA_VERSION } from "@agentmesh/contracts";
import { checkDurability, connectRedis, durabilityWarnings } from "./connect.js";
import { createRedisSessionStore } from "./redis.js";
import { runSessionStoreConformance, testCommit, testSessionState } from "./testing.js";

const redisUrl = inject("redisUrl");

runSessionStoreConformance("redis", async (opts) => {
  const redis = await connectRedis(redisUrl, { name: "session-store-conformance" });
  const keyPrefix = uniquePrefix("store");
  const store = createRedisSessionStore(redis, { ...opts, keyPrefix });
  return {
    store,
    async cleanup() {
      await store.close();
      await dropPrefix(redis, keyPrefix);
      await redis.quit();
    },
  };
});

describe("redis session store specifics", () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = await connectRedis(redisUrl, { name: "session-store-int" });
  });
  afterAll(async () => {
    await redis.quit();
  });
  const opts = (keyPrefix: string) => ({
    keyPrefix,
    activeTtlMs: 60_000,
    finishedTtlMs: 10_000,
    idempotencyTtlMs: 60_000,
  });

  it("uses the documented key layout, one hash tag per session", async () => {
    const kp = uniquePrefix("store");
    const store = createRedisSessionStore(redis, opts(kp));
    try {
      const s = testSessionState("sess-layout-1");
      await store.create(s);
      await store.commit(testCommit(s, "in:a", { timers: [{ member: "t-1", dueAt: 5 }] }));
      await store.claimIdempotencyKey("k1", "sess-layout-1");
      const keys: string[] = [];
      let cursor = "0";
      do {
        const [next, batch] = await redis.scan(cursor, "MATCH", `${kp}:*`);
        cursor = next;
        keys.push(...batch);
      } while (cursor !== "0");
      expect(keys.sort()).toEqual([
        `${kp}:idem:k1`,
        `${kp}:s:{sess-layout-1}:applied`,
        `${kp}:s:{sess-layout-1}:log`,
        `${kp}:s:{sess-layout-1}:state`,
        `${kp}:timers`,
      ]);
      expect(await redis.hget(`${kp}:s:{sess-layout-1}:state`, "version")).toBe("1");
      expect(await redis.hget(`${kp}:s:{sess-layout-1}:state`, "outbox_version")).toBe("1");
      expect(await redis.pttl(`${kp}:idem:k1`)).toBeGreaterThan(0);
    } finally {
      await dropPrefix(redis, kp);
    }
  });

  it("treats a corrupt stored state as an error, not as a missing session", async () => {
    const kp = uniquePrefix("store");
    const store = createRedisSessionStore(redis, opts(kp));
    try {
      await store.create(testSessionState("sess-corrupt-1"));
      await redis.hset(`${kp}:s:{sess-corrupt-1}:state`, "state", "{not json");
      await expect(store.load("sess-corrupt-1")).rejects.toThrow(/corrupt state of session sess-corrupt-1/);
      await redis.hset(`${kp}:s:{sess-corrupt-1}:state`, "state", JSON.stringify({ meta: { version: 0 } }));
      await expect(store.load("sess-corrupt-1")).rejects.toThrow(/corrupt state/);
    } finally {
      await dropPrefix(redis, kp);
    }
  });

  it("checks the stored layout version: a newer one is refused (no write), a legacy one is migrated", async () => {
    const kp = uniquePrefix("store");
    const store = createRedisSessionStore(redis, opts(kp));
    const key = `${kp}:s:{sess-schema-1}:state`;
    try {
      const s = testSessionState("sess-schema-1");
      await store.create(s);
      expect(await redis.hget(key, "schema")).toBe(String(STATE_SCHEMA_VERSION));
      // A newer coordinator wrote the session, with a field this one does not know.
      const newer = { ...s, meta: { ...s.meta, field_of_the_future: 1 } };
      await redis.hset(key, "schema", String(STATE_SCHEMA_VERSION + 1), "state", JSON.stringify(newer));
      const err = await store.load("sess-schema-1").then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AgentmeshError);
      expect((err as AgentmeshError).code).toBe("unsupported_version");
      expect((err as AgentmeshError).message).toMatch(
        new RegExp(`layout version ${STATE_SCHEMA_VERSION + 1}, newer than this service's ${STATE_SCHEMA_VERSION}`),
      );
      expect(JSON.parse((await redis.hget(key, "state")) ?? "{}")).toEqual(newer);
      // A hash from before the version was stored (layout 1): a pause there has no expires_at.
      const legacy = { ...s, meta: { ...s.meta, status: "awaiting_user", pause: { since: 5, deadline_left_ms: 100 } } };
      await redis.hdel(key, "schema");
      await redis.hset(key, "state", JSON.stringify(legacy));
      expect((await store.load("sess-schema-1"))?.state.meta.pause).toEqual({
        since: 5,
        deadline_left_ms: 100,
        expires_at: null,
      });
    } finally {
      await dropPrefix(redis, kp);
    }
  });

  it("closes the connection only when it owns it", async () => {
    const own = await connectRedis(redisUrl, { name: "session-store-owned" });
    await createRedisSessionStore(redis, opts(uniquePrefix("store"))).close();
    expect(redis.status).toBe("ready");
    await createRedisSessionStore(own, { ...opts(uniquePrefix("store")), ownsConnection: true }).close();
    // quit() resolves on the server's OK; the socket closes just after.
    if (own.status !== "end") await once(own, "end");
    expect(own.status).toBe("end");
  });
});

describe("connectRedis", () => {
  it("names the connection", async () => {
    const r = await connectRedis(redisUrl, { name: "session-store-named" });
    try {
      expect(await r.client("GETNAME")).toBe("session-store-named");
    } finally {
      await r.quit();
    }
  });

  it("fails fast with the URL in the message when nothing listens", async () => {
    const port = await freePort();
    const t0 = Date.now();
    await expect(connectRedis(`redis://127.0.0.1:${port}`, { name: "nobody", connectTimeoutMs: 2000 })).rejects.toThrow(
      `cannot reach Redis at redis://127.0.0.1:${port}`,
    );
    expect(Date.now() - t0).toBeLessThan(2500);
  });
});

describe("checkDurability", () => {
  it("reports the server's real settings and the matching warnings", async () => {
    const redis = await connectRedis(redisUrl, { name: "session-store-durability" });
    try {
      const r = await checkDurability(redis);
      const [, aof] = (await redis.config("GET", "appendonly")) as [string, string];
      const [, fsync] = (await redis.config("GET", "appendfsync")) as [string, string];
      expect(r.configAvailable).toBe(true);
      expect(r.aof).toBe(aof === "yes");
      expect(r.appendfsync).toBe(fsync);
      expect(typeof r.maxmemoryPolicy).toBe("string");
      expect(r.warnings).toEqual(durabilityWarnings(r));
    } finally {
      await redis.quit();
    }
  });

  it("keeps working when CONFIG is denied, as on managed Redis", async () => {
    const admin = await connectRedis(redisUrl, { name: "session-store-acl-admin" });
    const user = uniquePrefix("bbuser");
    try {
      // A throwaway ACL user that may do everything but CONFIG; deleted below.
      await admin.acl("SETUSER", user, "on", ">pw-for-test", "~*", "&*", "+@all", "-config");
      const u = new URL(redisUrl);
      u.username = user;
      u.password = "pw-for-test";
      const limited = await connectRedis(u.toString(), { name: "session-store-acl" });
      try {
        const r = await checkDurability(limited);
        expect(r).toMatchObject({ configAvailable: false, aof: null, appendfsync: null, maxmemoryPolicy: null });
        expect(r.warnings[0]).toMatch(/durability is unverified/);
      } finally {
        await limited.quit();
      }
    } finally {
      await admin.acl("DELUSER", user);
      await admin.quit();
    }
  });
});
