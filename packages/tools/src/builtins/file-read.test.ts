import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createFileReadTool, readConfined } from "./file-read.js";

let base: string;
let root: string;
let outside: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "file-read-"));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(join(root, "docs"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "docs", "a.md"), "# A\nhello");
  writeFileSync(join(root, "big.txt"), "x".repeat(5000));
  writeFileSync(join(outside, "secret.txt"), "TOP-SECRET");
  symlinkSync(join(outside, "secret.txt"), join(root, "link.txt"));
  symlinkSync(outside, join(root, "linkdir"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const read = (p: string) => readConfined([root], p, 1000);

async function failsWith(p: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await expect(p).rejects.toMatchObject({
    name: "AgentmeshError",
    code,
    ...(message ? { message: expect.stringMatching(message) as unknown } : {}),
  });
}

describe("file_read", () => {
  it("reads a file inside the root, by relative or absolute path", async () => {
    expect(await read("docs/a.md")).toEqual({
      path: join("docs", "a.md"),
      content: "# A\nhello",
      bytes: 9,
      truncated: false,
    });
    expect((await read(join(root, "docs", "a.md"))).content).toBe("# A\nhello");
  });

  it("caps the size and says so", async () => {
    expect(await read("big.txt")).toMatchObject({ bytes: 1000, truncated: true });
  });

  it("refuses '..' traversal and absolute paths outside the roots", async () => {
    await failsWith(read("../outside/secret.txt"), "permission_denied");
    await failsWith(read("docs/../../outside/secret.txt"), "permission_denied");
    await failsWith(read(join(outside, "secret.txt")), "permission_denied");
    await failsWith(read("/etc/passwd"), "permission_denied");
  });

  it("refuses a link inside the root that points outside, as file or as directory", async () => {
    await failsWith(read("link.txt"), "permission_denied");
    await failsWith(read("linkdir/secret.txt"), "permission_denied");
  });

  it("refuses a file swapped for a link after the path was checked (O_NOFOLLOW on the open)", async () => {
    const victim = join(root, "swap.txt");
    writeFileSync(victim, "harmless");
    const p = readConfined([root], "swap.txt", 1000, {
      afterCheck: async () => {
        rmSync(victim);
        symlinkSync(join(outside, "secret.txt"), victim);
      },
    });
    await failsWith(p, "permission_denied", /symbolic link/);
  });

  it("refuses a directory swapped for a link after the check: the OPENED file is checked", async () => {
    mkdirSync(join(root, "sub"));
    writeFileSync(join(root, "sub", "secret.txt"), "harmless");
    const p = readConfined([root], "sub/secret.txt", 1000, {
      afterCheck: async () => {
        renameSync(join(root, "sub"), join(root, "sub-old"));
        symlinkSync(outside, join(root, "sub"));
      },
    });
    await failsWith(p, "permission_denied", /opened file is not inside/);
  });

  it("refuses a FIFO without hanging, and reports a missing file as bad input", async () => {
    execFileSync("mkfifo", [join(root, "pipe")]);
    await failsWith(read("pipe"), "invalid_tool_input");
    await failsWith(read("nope.md"), "invalid_tool_input");
    await failsWith(read("docs"), "invalid_tool_input");
  });

  it("as a tool: typed errors through the executor, never retried", async () => {
    const exec = createSafeExecutor({
      registry: createToolRegistry([createFileReadTool({ roots: [root], allowedRoles: ["researcher"] })]),
    });
    const call = (path: unknown) =>
      exec.call({ tool: "file_read", args: { path }, role: "researcher", sessionId: "s", taskId: "t" });
    expect(await call("docs/a.md")).toMatchObject({ ok: true, output: { content: "# A\nhello" } });
    const denied = await call("link.txt");
    expect(denied).toMatchObject({ ok: false, error: { code: "permission_denied", fault: "caller" } });
    expect(denied.records).toHaveLength(1);
    expect(await call("a\0b")).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
  });
});
