/**
 * The quick start's third line, `npm run web` (scripts/web.mjs), as a person runs it: it prints
 * the gateway's URL, the API answers there without a key, and Ctrl-C (SIGINT) stops everything
 * it started. NATS and Redis are the test servers, so it starts neither.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, inject, test } from "vitest";
import { uniquePrefix } from "../setup/prefix.js";

const ROOT = join(import.meta.dirname, "../..");
let web: ChildProcess | undefined;

/** A loopback port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

afterAll(() => {
  if (web?.exitCode === null) web.kill("SIGKILL");
});

describe("npm run web", () => {
  test("serves the API on the printed loopback URL without a key, and SIGINT stops it all", async () => {
    const port = await freePort();
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NATS_URL: inject("natsUrl"),
      REDIS_URL: inject("redisUrl"),
      AGENTMESH_PREFIX: uniquePrefix("web"),
      AGENTMESH_GATEWAY_PORT: String(port),
    };
    const proc = spawn(process.execPath, [join(ROOT, "scripts/web.mjs")], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    web = proc;
    let out = "";
    proc.stdout?.on("data", (b: Buffer) => (out += b.toString()));
    proc.stderr?.on("data", (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));

    const url = await new Promise<string>((resolve, reject) => {
      const t = setInterval(() => {
        const m = /agentmesh is running: (http:\/\/\S+)/.exec(out);
        if (m?.[1]) {
          clearInterval(t);
          resolve(m[1]);
        }
        if (proc.exitCode !== null) {
          clearInterval(t);
          reject(new Error(`web.mjs exited (${proc.exitCode}):\n${out}`));
        }
      }, 200);
    });
    expect(url).toBe(`http://127.0.0.1:${port}`);

    const started = await fetch(`${url}/api/v1/query`, {
      method: "POST",
      headers: { accept: "application/json", "content-type": "application/json" },
      // the offline engine answers arithmetic through critic-chain's calculator (the default workflow is the supervisor)
      body: JSON.stringify({ query: "What is 6 * 7?", workflow: "critic-chain" }),
    });
    expect(started.status).toBe(202);
    const { session_id: sid } = (await started.json()) as { session_id: string };
    let session: { status?: string; final_answer?: string | null } = {};
    for (let i = 0; i < 150 && session.status !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      session = (await (await fetch(`${url}/api/v1/sessions/${sid}`)).json()) as typeof session;
    }
    expect(session).toMatchObject({ status: "completed", final_answer: expect.stringMatching(/42/) });

    proc.kill("SIGINT");
    expect(await exited).toBe(130);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    expect(out).not.toMatch(/\n\s+at /); // no stack trace
  }, 120_000);
});
