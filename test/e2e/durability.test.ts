import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { freePort, startRedis } from "../setup/infra.js";
import { uniquePrefix } from "../setup/prefix.js";
import { serviceArgv } from "./harness.js";

const root = join(import.meta.dirname, "../..");
const servers: ChildProcess[] = [];
const dirs: string[] = [];

/** A redis-server of our own with the given persistence flags. */
async function redis(args: string[]): Promise<string> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "agentmesh-dur-"));
  dirs.push(dir);
  servers.push(await startRedis(port, dir, args));
  return `redis://127.0.0.1:${port}`;
}

/** Runs a coordinator until it prints `until` or exits; returns its exit code (null if still running) and output. */
function coordinator(redisUrl: string, strict: boolean, until: RegExp): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, serviceArgv("coordinator"), {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      NATS_URL: inject("natsUrl"),
      REDIS_URL: redisUrl,
      AGENTMESH_PREFIX: uniquePrefix("dur"),
      AGENTMESH_REQUIRE_DURABLE: strict ? "1" : "0",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve({ code: null, out });
    }, 30_000);
    const on = (b: Buffer) => {
      out += b.toString();
      if (until.test(out)) {
        clearTimeout(timer);
        child.kill("SIGTERM");
        child.once("exit", () => resolve({ code: null, out }));
      }
    };
    child.stdout.on("data", on);
    child.stderr.on("data", on);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

let volatile: string;
let durable: string;
beforeAll(async () => {
  volatile = await redis(["--appendonly", "no"]);
  durable = await redis(["--appendonly", "yes", "--appendfsync", "always", "--maxmemory-policy", "noeviction"]);
});
afterAll(() => {
  for (const s of servers) s.kill("SIGTERM");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("Redis durability is checked at start-up", () => {
  test("strict mode refuses a Redis without AOF, naming the URL and the reason, no stack trace", async () => {
    const r = await coordinator(volatile, true, /"msg":"started"/);
    expect(r.code).toBe(1);
    expect(r.out).toContain("AGENTMESH_REQUIRE_DURABLE=1");
    expect(r.out).toContain(volatile);
    expect(r.out).toMatch(/AOF|appendonly/i);
    expect(r.out).not.toMatch(/\n\s+at /);
  });

  test("without strict mode the same Redis is used, with a warning", async () => {
    const r = await coordinator(volatile, false, /"msg":"started"/);
    expect(r.code).toBeNull();
    expect(r.out).toMatch(/"durability":"[^"]*(AOF|appendonly)/i);
  });

  test("strict mode starts against AOF + appendfsync always + noeviction", async () => {
    const r = await coordinator(durable, true, /"msg":"started"/);
    expect(r.code).toBeNull();
    expect(r.out).not.toContain('"durability"');
  });
});
