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

  test("NATS_URL naming a cluster's servers is taken (no 'Invalid URL'); none answering is the NATS failure, naming them all", async () => {
    const url = `nats://127.0.0.1:${await freePort()},nats://127.0.0.1:${await freePort()}`;
    const r = cli({ NATS_URL: url }, "ask", "What is 2 + 2?");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot reach NATS at ${url}`);
    expect(r.stderr).not.toMatch(/Invalid URL|NATS_URL/);
  }, 60_000);

  test("supervisor flags are checked before connecting: valid ones pass on (the failure is NATS), an unknown one is named", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const ok = cli(
      { NATS_URL: url },
      "ask",
      "--workflow",
      "supervisor",
      "--mode",
      "code",
      "--depth",
      "quick",
      "--scenario",
      "news",
      "Sum 1 to 10",
    );
    expect(ok.status).toBe(1);
    expect(ok.stderr).toContain(`cannot reach NATS at ${url}`);
    const bad = cli({ NATS_URL: url }, "ask", "--workflow", "supervisor", "--mode", "poetry", "Sum 1 to 10");
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('--mode: unknown value "poetry"');
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });

  test("a flag of another workflow is exit code 2 naming the flag's option and its workflow, before connecting", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const cases: Array<[string[], string]> = [
      [["--mode", "code"], 'the option "mode" belongs to the supervisor workflow; this query runs critic-chain'],
      [["-w", "halo", "--strategy", "fallback"], 'the option "strategy_profile" belongs to the blackboard workflow'],
      [["-w", "supervisor", "--capabilities", "rag"], 'the option "capabilities" belongs to the halo workflow'],
      [["-w", "halo", "--retry-limit", "2"], 'the option "retry_limit" belongs to the critic-chain workflow'],
    ];
    for (const [flags, message] of cases) {
      const r = cli({ NATS_URL: url }, "ask", ...flags, "Sum 1 to 10");
      expect(r.status, flags.join(" ")).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toContain("cannot reach NATS");
    }
    // with its own workflow the flag passes on (the failure is NATS)
    const ok = cli({ NATS_URL: url }, "ask", "--retry-limit", "2", "Sum 1 to 10");
    expect(ok.status).toBe(1);
    expect(ok.stderr).toContain(`cannot reach NATS at ${url}`);
  }, 60_000);

  test("--attach files are read before connecting: a missing one is exit code 2 naming it; a good one passes on (the failure is NATS)", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const missing = join(root, "no-such-dir", "sales.csv");
    const bad = cli(
      { NATS_URL: url },
      "ask",
      "--workflow",
      "supervisor",
      "--attach",
      join(root, "package.json"),
      "--attach",
      missing,
      "Total the sales",
    );
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain(`--attach: cannot read ${JSON.stringify(missing)} (no such file)`);
    expect(bad.stderr).not.toContain("NATS");
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const ok = cli(
      { NATS_URL: url },
      "ask",
      "--workflow",
      "supervisor",
      "-a",
      join(root, "package.json"),
      "Total the sales",
    );
    expect(ok.status).toBe(1);
    expect(ok.stderr).toContain(`cannot reach NATS at ${url}`);
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

  test("--timeout that is not a positive number of seconds is an error, before anything connects", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    for (const t of ["abc", "0", "-3"]) {
      const r = cli({ NATS_URL: url }, "ask", "--timeout", t, "What is 2 + 2?");
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("--timeout must be a number of seconds");
      expect(r.stderr).not.toContain("cannot reach NATS");
    }
  }, 60_000);

  test("a question or answer with control or bidi characters is refused; no error echoes them raw", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const q = cli({ NATS_URL: url }, "ask", "What is \u001b]0;pwned\u0007 2 + 2?");
    expect(q.status).toBe(1);
    expect(q.stderr).toContain("the question contains a control character (U+001B)");
    const a = cli({ NATS_URL: url }, "answer", "abcdefgh12345678", "yes \u202eplease");
    expect(a.status).toBe(1);
    expect(a.stderr).toContain("the answer contains a bidi override character (U+202E)");
    const bad = cli({ NATS_URL: url }, "inspect", "\u001b[2J\u001b]8;;https://evil.example\u0007x");
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("not a session id");
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    for (const r of [q, a, bad]) expect(r.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
  }, 60_000);
});

describe("the CLI prints no credentials", () => {
  test("NATS password and token", async () => {
    const port = await freePort();
    for (const url of [`nats://cli:nats-pw-31337@127.0.0.1:${port}`, `nats://tok3n-31337-secret@127.0.0.1:${port}`]) {
      const r = cli({ NATS_URL: url }, "ask", "What is 2 + 2?");
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`cannot reach NATS at nats://`);
      expect(r.stderr + r.stdout).not.toMatch(/31337/);
    }
  }, 60_000);

  test("Redis password, also when the URL is invalid", async () => {
    const port = await freePort();
    const r = cli({ REDIS_URL: `redis://inspect:redis-pw-31337@127.0.0.1:${port}` }, "inspect", "abcdefgh12345678");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot reach Redis at redis://inspect:***@127.0.0.1:${port}`);
    const bad = cli({ REDIS_URL: "redis://inspect:pw/31337@bad host" }, "sessions");
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("REDIS_URL");
    for (const x of [r, bad]) expect(x.stderr + x.stdout).not.toMatch(/31337/);
  }, 60_000);
});
