import { ESLint } from "eslint";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const eslint = new ESLint({ cwd: root });

/**
 * The rule ids ESLint reports for `code` linted in place of the file at `path` (an existing file of
 * the repository, so the typed rules find it in the TypeScript project). A parse error fails the test.
 */
async function rulesHit(code: string, path: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}/${path}` });
  const messages = result?.messages ?? [];
  const fatal = messages.filter((m) => m.fatal || m.ruleId === null);
  expect(fatal.map((m) => m.message)).toEqual([]);
  return messages.map((m) => m.ruleId ?? "");
}

const ASSERTION = "@typescript-eslint/consistent-type-assertions";

describe("the workflows take no type assertions", { timeout: 60_000 }, () => {
  const where = "packages/workflows/src/ops.ts";

  it("refuses `as X` in workflow code", async () => {
    const hits = await rulesHit('export const n = JSON.parse("1") as number;\n', where);
    expect(hits).toContain(ASSERTION);
  });

  it("refuses `as unknown as X` and the angle-bracket spelling", async () => {
    expect(await rulesHit("export const s = 1 as unknown as string;\n", where)).toContain(ASSERTION);
    expect(await rulesHit('export const n = <number>JSON.parse("1");\n', where)).toContain(ASSERTION);
  });

  it("allows `as const`, and assertions outside the workflows", async () => {
    expect(await rulesHit('export const k = ["a", "b"] as const;\n', where)).not.toContain(ASSERTION);
    const elsewhere = await rulesHit('export const n = JSON.parse("1") as number;\n', "packages/llm/src/index.ts");
    expect(elsewhere).not.toContain(ASSERTION);
  });
});

describe("functions stay short", { timeout: 60_000 }, () => {
  const body = Array.from({ length: 81 }, (_, i) => `  total += ${i};`).join("\n");
  const long = `export function long(): number {\n  let total = 0;\n${body}\n  return total;\n}\n`;

  it("refuses a source function of more than 80 lines", async () => {
    expect(await rulesHit(long, "packages/llm/src/index.ts")).toContain("max-lines-per-function");
  });

  it("lets a test run longer", async () => {
    expect(await rulesHit(long, "packages/llm/src/offline.test.ts")).not.toContain("max-lines-per-function");
  });
});
