import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test/setup/wait.js";
import { freePort, startRedis } from "../../../test/setup/infra.js";
import { connectRedis, redisHealth } from "./connect.js";

// Its own redis-server, which this test kills and starts again on the same port.
const dir = mkdtempSync(join(tmpdir(), "agentmesh-redis-health-"));
let server: ChildProcess | null = null;
afterAll(() => {
  server?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("redisHealth: what the probes read about a Redis client", () => {
  it("ready while it takes commands, unready (not dead) through an outage, ready again after it, dead once ended", async () => {
    const port = await freePort();
    server = await startRedis(port, dir, []);
    const redis = await connectRedis(`redis://127.0.0.1:${port}`, { name: "redis-health-test" });
    const health = redisHealth(redis);
    expect(health.whyNotReady()).toBeNull();
    expect(health.whyDead()).toBeNull();

    const down = server;
    await new Promise((r) => {
      down.once("exit", r);
      down.kill("SIGKILL");
    });
    await waitUntil("the outage to show", () => health.whyNotReady() !== null);
    expect(health.whyNotReady()).toMatch(/^redis: (connecting|reconnecting|close)$/);
    expect(health.whyDead()).toBeNull();

    server = await startRedis(port, dir, []);
    await waitUntil("the reconnect to show", () => health.whyNotReady() === null);

    await redis.quit();
    await waitUntil("the client to end", () => redis.status === "end");
    expect(health.whyNotReady()).toBe("redis: end");
    expect(health.whyDead()).toBe("redis: connection ended for good");
  });
});
