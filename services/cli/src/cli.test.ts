import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { freePort } from "../../../test/setup/infra.js";

const root = join(import.meta.dirname, "../../..");

const cli = (env: Record<string, string>, ...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", join(root, "services/cli/src/main.ts"), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, ...env },
    encoding: "utf8",
    timeout: 30_000,
  });

describe("the CLI fails clearly, naming the URL, never with a stack trace", () => {
  test("NATS unreachable", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const r = cli({ NATS_URL: url }, "ask", "What is 2 + 2?");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot reach NATS at ${url}`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  test("Redis unreachable", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const r = cli({ REDIS_URL: url }, "inspect", "abcdefgh12345678");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot reach Redis at ${url}`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  test("bad configuration lists every problem", () => {
    const r = cli({ NATS_URL: "not a url", AGENTMESH_PREFIX: "Bad Prefix!" }, "services");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("NATS_URL");
    expect(r.stderr).toContain("AGENTMESH_PREFIX");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  test("a malformed session id is refused before anything connects", () => {
    const r = cli({}, "inspect", "bad.id");
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("not a session id");
  });
});
