import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createCorpusSearchTool } from "./corpus-search.js";

let dir: string;
let outside: string;
let corpus: ReturnType<typeof createCorpusSearchTool>;

const filler = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `Paragraph ${i} about ${topic} and nothing else of note.`).join("\n\n");

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "corpus-"));
  outside = mkdtempSync(join(tmpdir(), "corpus-outside-"));
  mkdirSync(join(dir, "astro"));
  writeFileSync(join(dir, "cooking.md"), `# Cooking\n\n${filler("pasta and sauces", 20)}`);
  writeFileSync(
    join(dir, "astro", "planets.md"),
    `# Planets\n\n${filler("the solar system", 15)}\n\nJupiter is the largest planet; its Great Red Spot is a storm bigger than Earth.\n\n${filler("orbits", 15)}`,
  );
  writeFileSync(join(dir, "notes.txt"), "Gardening tips: water tomatoes in the morning.");
  writeFileSync(join(dir, "ignored.bin"), "Jupiter Jupiter Jupiter");
  writeFileSync(join(outside, "leak.md"), "Jupiter secret outside the corpus");
  symlinkSync(join(outside, "leak.md"), join(dir, "leak.md"));
  corpus = createCorpusSearchTool({ dir, allowedRoles: ["researcher"], passageChars: 300, timeoutMs: 20_000 });
});
afterAll(async () => {
  await corpus.pool.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

const search = (query: string, limit = 3) =>
  createSafeExecutor({ registry: createToolRegistry([corpus.tool]) }).call({
    tool: "corpus_search",
    args: { query, limit },
    role: "researcher",
    sessionId: "s",
    taskId: "t",
  });

describe("corpus_search", () => {
  it("finds the right document and returns its path, the matching passage and a score", async () => {
    const r = await search("largest planet storm");
    expect(r.ok).toBe(true);
    const results = (r.ok ? r.output : { results: [] }) as {
      results: Array<{ path: string; passage: string; score: number }>;
    };
    expect(results.results[0]?.path).toBe(join("astro", "planets.md"));
    expect(results.results[0]?.passage).toContain("Great Red Spot");
    expect(results.results[0]?.passage.length).toBeLessThanOrEqual(300);
    expect(results.results[0]?.score).toBeGreaterThan(0);
  });

  it("does not index links (not followed) or files of other types", async () => {
    const r = await search("Jupiter", 10);
    const paths = r.ok ? (r.output as { results: Array<{ path: string }> }).results.map((x) => x.path) : [];
    expect(paths).not.toContain("leak.md");
    expect(paths).not.toContain("ignored.bin");
    expect(JSON.stringify(r)).not.toContain("secret outside");
  });

  it("sees a changed file on the next query", async () => {
    writeFileSync(join(dir, "notes.txt"), "Gardening tips: prune the quinces in winter.");
    const r = await search("quinces");
    expect(r).toMatchObject({ ok: true, output: { results: [{ path: "notes.txt" }] } });
  });

  it("returns no results for a query that matches nothing, and rejects an empty query", async () => {
    expect(await search("zyzzyva")).toMatchObject({ ok: true, output: { results: [] } });
    expect(await search("   ")).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
  });
});
