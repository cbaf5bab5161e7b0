import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test/setup/wait.js";
import { freePort, startNats } from "../../../test/setup/infra.js";
import { connectNats } from "./connect.js";
import { linkHealth } from "./link-health.js";

// Its own nats-server, which this test kills and starts again on the same port.
const dir = mkdtempSync(join(tmpdir(), "agentmesh-link-health-"));
let server: ChildProcess | null = null;
afterAll(() => {
  server?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("linkHealth: what the probes read about a NATS connection", () => {
  it("ready while connected, unready (not dead) through an outage, ready again after it, dead once closed", async () => {
    const port = await freePort();
    server = await startNats(port, dir);
    const nc = await connectNats({ url: `nats://127.0.0.1:${port}`, name: "link-health-test" });
    const link = linkHealth(nc);
    expect(link.whyNotReady()).toBeNull();
    expect(link.whyDead()).toBeNull();

    const down = server;
    await new Promise((r) => {
      down.once("exit", r);
      down.kill("SIGKILL");
    });
    await waitUntil("the disconnect to show", () => link.whyNotReady() !== null);
    expect(link.whyNotReady()).toBe("nats: disconnected, reconnecting");
    // the client keeps reconnecting: a restart would not help, so it is not dead
    expect(link.whyDead()).toBeNull();

    server = await startNats(port, dir);
    await waitUntil("the reconnect to show", () => link.whyNotReady() === null);
    expect(link.whyDead()).toBeNull();

    await nc.close();
    expect(link.whyNotReady()).toBe("nats: connection closed");
    expect(link.whyDead()).toBe("nats: connection closed for good");
  });
});
