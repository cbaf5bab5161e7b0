import { describe, expect, it } from "vitest";
import { redisAccess } from "@agentmesh/session-store";
import { LIMITS_REDIS_COMMANDS, checkLimitsOptions } from "./limits.js";
import { createLocalLimits, runLimitsConformance } from "./testing.js";

runLimitsConformance("local twin", async (opts) => {
  let clock = 1_000_000;
  const limits = createLocalLimits({ ...opts, keyPrefix: "unit", now: () => clock });
  return {
    limits,
    advance: (ms) => {
      clock += ms;
    },
    cleanup: async () => {},
  };
});

describe("gateway limits specifics", () => {
  it("needs only commands the gateway's Redis ACL user is granted", () => {
    expect(LIMITS_REDIS_COMMANDS).toEqual(expect.arrayContaining(["time", "zadd", "zremrangebyscore", "pexpire"]));
    expect(redisAccess("agentmesh").gateway.commands).toEqual(expect.arrayContaining([...LIMITS_REDIS_COMMANDS]));
  });

  it("refuses options that are not positive integers or a key prefix", () => {
    const ok = {
      keyPrefix: "agentmesh",
      rateLimit: 1,
      rateWindowMs: 1000,
      maxConcurrentSessions: 1,
      sessionTtlMs: 1000,
    };
    expect(checkLimitsOptions(ok)).toEqual({
      ...ok,
      requestKeyTtlMs: 86_400_000,
      maxStreamsPerKey: 20,
      streamLeaseTtlMs: 30_000,
      streamOpenRate: 120,
      streamOpenWindowMs: 60_000,
    });
    expect(() => checkLimitsOptions({ ...ok, requestKeyTtlMs: 0 })).toThrow(/requestKeyTtlMs/);
    expect(() => checkLimitsOptions({ ...ok, maxStreamsPerKey: 0 })).toThrow(/maxStreamsPerKey/);
    expect(() => checkLimitsOptions({ ...ok, rateLimit: 0 })).toThrow(/rateLimit must be a positive integer/);
    expect(() => checkLimitsOptions({ ...ok, sessionTtlMs: 1.5 })).toThrow(/sessionTtlMs/);
    expect(() => checkLimitsOptions({ ...ok, keyPrefix: "a*" })).toThrow(/key prefix/);
  });

  it("counts a full window again as soon as its oldest request is exactly a window old", async () => {
    let clock = 0;
    const limits = createLocalLimits({
      keyPrefix: "unit",
      rateLimit: 1,
      rateWindowMs: 1000,
      maxConcurrentSessions: 1,
      sessionTtlMs: 1000,
      now: () => clock,
    });
    expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
    clock = 999;
    expect(await limits.allowRequest("alice")).toEqual({ allowed: false, retryAfterMs: 1 });
    clock = 1000;
    expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
  });
});
