import { execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startRedis } from "../../../test/setup/infra.js";
import { connectRedis } from "./connect.js";

// A redis-server of our own speaking only TLS on a loopback port, with a private CA made here.
let dir: string;
let server: ChildProcess;
let port: number;
let ca: string;

/** A CA, and a server certificate it signs for 127.0.0.1 and localhost. */
function makeCerts(d: string): void {
  const ssl = (...args: string[]) => execFileSync("openssl", args, { cwd: d, stdio: "pipe" });
  ssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "1",
    "-subj",
    "/CN=agentmesh test CA",
  );
  ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(d, "san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  ssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.crt",
    "-days",
    "1",
    "-extfile",
    "san.ext",
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentmesh-redis-tls-"));
  makeCerts(dir);
  ca = join(dir, "ca.crt");
  port = await freePort();
  // `--port 0` after startRedis's own `--port`: the last one wins, so only the TLS port listens.
  server = await startRedis(port, dir, [
    "--port",
    "0",
    "--tls-port",
    String(port),
    "--tls-cert-file",
    join(dir, "server.crt"),
    "--tls-key-file",
    join(dir, "server.key"),
    "--tls-ca-cert-file",
    ca,
    "--tls-auth-clients",
    "no",
    "--user",
    "svc",
    "on",
    ">tls-pw-31337",
    "~*",
    "+@all",
  ]);
}, 60_000);

afterAll(() => {
  server?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

describe("REDIS_URL with TLS and credentials", () => {
  it("rediss:// with REDIS_TLS_CA verifies the server and logs in as the URL's user", async () => {
    const r = await connectRedis(`rediss://svc:tls-pw-31337@127.0.0.1:${port}`, { name: "tls-int", tlsCaFile: ca });
    expect(await r.call("ACL", "WHOAMI")).toBe("svc");
    await r.quit();
  });

  it("without the CA the server's certificate is refused, with a clear error and no password", async () => {
    const err = await connectRedis(`rediss://svc:tls-pw-31337@127.0.0.1:${port}`, {
      name: "tls-int",
      connectTimeoutMs: 2000,
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^cannot reach Redis at rediss:\/\/svc:\*\*\*@127\.0\.0\.1:\d+: .*certificate/,
    );
    expect((err as Error).message).not.toContain("31337");
  });

  it("a plain redis:// URL with REDIS_TLS_CA, or an unreadable CA file, is a configuration error", async () => {
    await expect(connectRedis(`redis://127.0.0.1:${port}`, { name: "tls-int", tlsCaFile: ca })).rejects.toThrow(
      /REDIS_TLS_CA is set but REDIS_URL redis:\/\/127\.0\.0\.1:\d+ does not use TLS/,
    );
    await expect(
      connectRedis(`rediss://127.0.0.1:${port}`, { name: "tls-int", tlsCaFile: join(dir, "missing.crt") }),
    ).rejects.toThrow(/cannot read the Redis TLS CA file/);
  });
});
