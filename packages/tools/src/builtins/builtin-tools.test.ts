import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createStaticWebSearch } from "../testing.js";
import { builtinTools, DEFAULT_TOOL_ROLES } from "./builtin-tools.js";

const dir = mkdtempSync(join(tmpdir(), "builtins-"));
writeFileSync(join(dir, "readme.md"), "# Readme\n\nagentmesh runs agents on NATS.");
const built = builtinTools({
  fileRoots: [dir],
  corpusDir: dir,
  webSearch: createStaticWebSearch([{ title: "t", url: "https://x", snippet: "s" }]),
  python: false,
});
afterAll(async () => {
  await built.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("builtinTools", { timeout: 30_000 }, () => {
  it("builds the configured tools with least-privilege roles, discoverable per role", () => {
    const registry = createToolRegistry(built.tools);
    expect(registry.list().map((t) => t.name)).toEqual([
      "calculator",
      "corpus_search",
      "file_read",
      "run_js",
      "web_search",
    ]);
    expect(registry.list({ role: "expert" }).map((t) => t.name)).toEqual(["calculator", "corpus_search", "run_js"]);
    expect(registry.list({ role: "critic" })).toEqual([]);
    expect(DEFAULT_TOOL_ROLES.file_read).toEqual(["researcher"]);
  });

  it("leaves out tools without configuration, and web_search defaults to the offline provider", async () => {
    const bare = builtinTools({ js: false, python: false });
    try {
      const registry = createToolRegistry(bare.tools);
      expect(registry.list().map((t) => t.name)).toEqual(["calculator", "web_search"]);
      const r = await createSafeExecutor({ registry }).call({
        tool: "web_search",
        args: { query: "x" },
        role: "researcher",
        sessionId: "s",
        taskId: "t",
      });
      expect(r).toMatchObject({
        ok: false,
        error: { code: "tool_unavailable", message: "no web search provider is configured" },
      });
    } finally {
      await bare.close();
    }
  });

  it("every tool answers through one executor", async () => {
    const exec = createSafeExecutor({ registry: createToolRegistry(built.tools) });
    const call = (tool: string, args: unknown) =>
      exec.call({ tool, args, role: "researcher", sessionId: "s", taskId: "t" });
    expect(await call("calculator", { expression: "2 * 21" })).toMatchObject({ ok: true, output: { result: "42" } });
    expect(await call("file_read", { path: "readme.md" })).toMatchObject({
      ok: true,
      output: { content: expect.stringContaining("NATS") as unknown },
    });
    expect(await call("corpus_search", { query: "NATS agents" })).toMatchObject({
      ok: true,
      output: { results: [{ path: "readme.md" }] },
    });
    expect(await call("web_search", { query: "x" })).toMatchObject({ ok: true, output: { provider: "static" } });
    expect(await call("run_js", { code: "[1, 2, 3].map((x) => x * 2)" })).toMatchObject({
      ok: true,
      output: { result: "[2,4,6]" },
    });
  });
});
