import { describe, expect, test } from "vitest";
import { CONNECTION_VARS, connectionConfig, parseEnv, secretsOf } from "./env.js";

const parse = (env: Record<string, string>) => connectionConfig(parseEnv(CONNECTION_VARS, env));

describe("Redis Sentinel settings from the environment", () => {
  test("none without REDIS_SENTINELS: REDIS_URL is the server", () => {
    expect(parse({}).redisSentinel).toBeUndefined();
  });

  test("a host:port list, the default primary name, the sentinels' own login", () => {
    expect(parse({ REDIS_SENTINELS: "10.0.0.1:26379, sentinel-2:26380,," }).redisSentinel).toEqual({
      sentinels: [
        { host: "10.0.0.1", port: 26379 },
        { host: "sentinel-2", port: 26380 },
      ],
      masterName: "agentmesh",
    });
    expect(
      parse({
        REDIS_SENTINELS: "s:26379",
        REDIS_SENTINEL_MASTER: "sessions",
        REDIS_SENTINEL_USERNAME: "watcher",
        REDIS_SENTINEL_PASSWORD: "pw-1234",
      }).redisSentinel,
    ).toEqual({
      sentinels: [{ host: "s", port: 26379 }],
      masterName: "sessions",
      username: "watcher",
      password: "pw-1234",
    });
  });

  test("a malformed list is refused naming the variable; the sentinels' password is a secret, never echoed", () => {
    expect(() => parse({ REDIS_SENTINELS: "s1:26379,s2" })).toThrow(/REDIS_SENTINELS=.*host:port/);
    expect(() => parse({ REDIS_SENTINELS: "s1:99999" })).toThrow(/REDIS_SENTINELS/);
    expect(() => parse({ REDIS_SENTINELS: " , " })).toThrow(/at least one sentinel/);
    expect(secretsOf({ REDIS_SENTINEL_PASSWORD: "pw-secret-77" })).toContain("pw-secret-77");
  });
});
