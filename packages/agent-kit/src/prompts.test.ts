import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { contractVersion, loadPromptContracts } from "./prompts.js";

const dirs: string[] = [];
const folder = (files: Record<string, unknown>): string => {
  const d = mkdtempSync(join(tmpdir(), "prompts-"));
  dirs.push(d);
  for (const [name, body] of Object.entries(files))
    writeFileSync(join(d, name), typeof body === "string" ? body : JSON.stringify(body));
  return d;
};
const contract = (id: string, version: number, system: string | string[] = `${id} v${version}`) => ({
  id,
  version,
  focus: "f",
  system,
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("prompt contracts", () => {
  it("load the highest version per id; an override folder replaces a built-in contract", () => {
    const builtin = folder({
      "perception.perceive.v1.json": contract("perception.perceive", 1),
      "perception.perceive.v2.json": contract("perception.perceive", 2, ["line one", "line two"]),
      "decision.plan.v1.json": contract("decision.plan", 1),
      "notes.md": "ignored",
    });
    const plain = loadPromptContracts({ builtinDirs: [builtin] });
    expect(plain.get("perception.perceive")?.system).toBe("line one\nline two");
    const override = folder({ "decision.plan.v1.json": contract("decision.plan", 1, "my own planner rules") });
    const merged = loadPromptContracts({ builtinDirs: [builtin], overrideDir: override });
    expect(merged.get("decision.plan")?.system).toBe("my own planner rules");
    expect(contractVersion(merged.get("perception.perceive")!)).toBe("perception.perceive/v2");
  });

  it("refuse a file whose name and content disagree, a malformed file, and a missing override folder", () => {
    expect(() =>
      loadPromptContracts({ builtinDirs: [folder({ "memory.update.v1.json": contract("memory.update", 2) })] }),
    ).toThrow(/file name says memory.update v1/);
    expect(() => loadPromptContracts({ builtinDirs: [folder({ "memory.update.v1.json": "{ not json" })] })).toThrow(
      /invalid prompt contracts/,
    );
    expect(() => loadPromptContracts({ builtinDirs: [folder({})], overrideDir: "/nonexistent/prompts" })).toThrow(
      /does not exist/,
    );
  });
});
