import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createGatewayApp } from "@agentmesh/gateway";
import { ENV_VARS } from "@agentmesh/service-kit";
import { TABLES, tableRows } from "../../scripts/doc-tables.js";

const root = join(import.meta.dirname, "../..");
const readme = readFileSync(join(root, "README.md"), "utf8");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === "node_modules") return [];
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") && !p.endsWith(".test.ts") ? [p] : [];
  });
}

describe("the README matches the code", () => {
  test.each(Object.keys(TABLES))("the %s table lists exactly what the code has", (name) => {
    const rows = tableRows(readme, name);
    expect(rows, `README has no <!-- table:${name} --> section`).not.toBeNull();
    expect(rows).toEqual(TABLES[name]?.());
  });

  test("every AGENTMESH_* variable the code mentions is in ENV_VARS (and so in the README)", () => {
    const known = new Set<string>(ENV_VARS.map((v) => v.name));
    const mentioned = new Set<string>();
    for (const f of [...sources(join(root, "packages")), ...sources(join(root, "services"))]) {
      for (const m of readFileSync(f, "utf8").matchAll(/\b(AGENTMESH_[A-Z_]+)\b/g)) mentioned.add(m[1] as string);
    }
    expect([...mentioned].filter((n) => !known.has(n))).toEqual([]);
  });

  test("the quick start's commands are what package.json and CI run", () => {
    const quick = readme.slice(readme.indexOf("## Quick start"), readme.indexOf("## Using a real model"));
    expect(quick).toContain('npm run ask -- "What is 0.1 + 0.2?"');
    expect(quick).toMatch(/^npm test\s/m);
    expect(quick).toMatch(/^npm run web\s/m);
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.ask).toContain("scripts/quickstart.mjs");
    expect(pkg.scripts.web).toBe("node scripts/web.mjs");
    expect(pkg.scripts.test).toContain("vitest run");
    const ci = readFileSync(join(root, ".ci/run"), "utf8");
    expect(ci).toMatch(/^npm test$/m);
  });

  test("the Gateway section's route table lists exactly the routes the gateway serves", () => {
    // Building the app touches none of its dependencies; only its routes are read.
    const served = createGatewayApp({} as never)
      .app.routes.filter((r) => r.method !== "ALL")
      .map((r) => `${r.method} ${r.path}`);
    const m = /<!-- gateway-routes -->\n([\s\S]*?)<!-- \/gateway-routes -->/.exec(readme);
    expect(m, "README has no <!-- gateway-routes --> table").not.toBeNull();
    const listed = [...(m?.[1] ?? "").matchAll(/^\| `([A-Z]+ \S+)` \|/gm)].map((r) => r[1]);
    expect([...listed].sort()).toEqual([...new Set(served)].sort());
  });
});
