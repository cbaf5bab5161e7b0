import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Redis } from "ioredis";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { connectRedis } from "./connect.js";

const redisUrl = inject("redisUrl");
let redis: Redis;
const prefix = uniquePrefix("connect-int");

beforeAll(async () => {
  redis = await connectRedis(redisUrl, { name: "connect-int" });
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
});

describe("connectRedis: commands of one tick leave together", () => {
  it("queues the commands issued in one tick for one write, and answers each in order", async () => {
    const key = `${prefix}:n`;
    const replies = Array.from({ length: 20 }, () => redis.incr(key));
    // still in this tick: nothing has been written yet, all 20 wait for the same write
    expect(redis.autoPipelineQueueSize).toBe(20);
    expect(await Promise.all(replies)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(redis.autoPipelineQueueSize).toBe(0);
  });

  it("keeps a failing command's error to itself", async () => {
    const key = `${prefix}:s`;
    const [set, bad, get] = await Promise.allSettled([redis.set(key, "x"), redis.incr(key), redis.get(key)]);
    expect(set).toEqual({ status: "fulfilled", value: "OK" });
    expect(bad.status).toBe("rejected");
    expect(get).toEqual({ status: "fulfilled", value: "x" });
  });
});
