import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { createGatewayApp } from "@agentmesh/gateway";
import { ENV_VARS } from "@agentmesh/service-kit";
import { ROLES, WorkflowName } from "@agentmesh/contracts";
import { DOC_PAGES, TABLES, tableRows, writeTable } from "../../scripts/doc-tables.js";

const root = join(import.meta.dirname, "../..");
const read = (page: string) => readFileSync(join(root, page), "utf8");
const readme = read("README.md");
/** The page that holds the gateway's route table. */
const GATEWAY_PAGE = "docs/gateway.md";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === "node_modules") return [];
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") && !p.endsWith(".test.ts") ? [p] : [];
  });
}

describe("the docs match the code", () => {
  test.each(Object.keys(TABLES))("the %s table lists exactly what the code has, in its page", (name) => {
    const page = DOC_PAGES[name];
    expect(page, `DOC_PAGES names no page for the ${name} table`).toBeDefined();
    const rows = tableRows(read(page as string), name);
    expect(rows, `${page} has no <!-- table:${name} --> section`).not.toBeNull();
    expect(rows).toEqual(TABLES[name]?.());
  });

  test("each generated table is in one page only, and the README holds none", () => {
    const pages = readdirSync(join(root, "docs"), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/${f}`);
    for (const name of Object.keys(TABLES)) {
      const holders = ["README.md", ...pages].filter((p) => read(p).includes(`<!-- table:${name} -->`));
      expect(holders).toEqual([DOC_PAGES[name]]);
    }
  });

  test("writing a table replaces its rows and keeps its header", () => {
    const doc = "<!-- table:x -->\n| a | b |\n| --- | --- |\n| old | 1 |\n| older | 2 |\n<!-- /table:x -->\n";
    expect(writeTable(doc, "x", ["| new | 3 |"])).toBe(
      "<!-- table:x -->\n| a | b |\n| --- | --- |\n| new | 3 |\n<!-- /table:x -->\n",
    );
  });

  test("every AGENTMESH_* variable the code mentions is in ENV_VARS (and so in the configuration page)", () => {
    const known = new Set<string>(ENV_VARS.map((v) => v.name));
    const mentioned = new Set<string>();
    for (const f of [...sources(join(root, "packages")), ...sources(join(root, "services"))]) {
      for (const m of readFileSync(f, "utf8").matchAll(/\b(AGENTMESH_[A-Z_]+)\b/g)) mentioned.add(m[1] as string);
    }
    expect([...mentioned].filter((n) => !known.has(n))).toEqual([]);
  });

  test("the README's quick start and web page commands are what package.json and CI run", () => {
    const quick = readme.slice(readme.indexOf("## Quick start"), readme.indexOf("## The five workflows"));
    expect(quick).toContain('npm run ask -- "What is 0.1 + 0.2?"');
    expect(quick).toMatch(/^npm test\s/m);
    const interfaces = readme.slice(readme.indexOf("## Interfaces"), readme.indexOf("## Reference"));
    expect(interfaces).toMatch(/^npm run web\s/m);
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.ask).toContain("scripts/quickstart.mjs");
    expect(pkg.scripts.web).toBe("node scripts/web.mjs");
    expect(pkg.scripts.test).toContain("vitest run");
    const ci = readFileSync(join(root, ".ci/run"), "utf8");
    expect(ci).toMatch(/^npm test$/m);
  });

  test("the gateway page's route table lists exactly the routes the gateway serves", () => {
    // Building the app touches none of its dependencies; only its routes are read.
    const served = createGatewayApp({} as never)
      .app.routes.filter((r) => r.method !== "ALL")
      .map((r) => `${r.method} ${r.path}`);
    const m = /<!-- gateway-routes -->\n([\s\S]*?)<!-- \/gateway-routes -->/.exec(read(GATEWAY_PAGE));
    expect(m, `${GATEWAY_PAGE} has no <!-- gateway-routes --> table`).not.toBeNull();
    const listed = [...(m?.[1] ?? "").matchAll(/^\| `([A-Z]+ \S+)` \|/gm)].map((r) => r[1]);
    expect([...listed].sort()).toEqual([...new Set(served)].sort());
  });
});

describe("the README is a front door", () => {
  test("it stays short: at most 200 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(200);
  });

  test("it counts and names every role of the registry", () => {
    const intro = readme.slice(0, readme.indexOf("## Quick start"));
    const roles = Object.keys(ROLES);
    const words = [
      "zero",
      "one",
      "two",
      "three",
      "four",
      "five",
      "six",
      "seven",
      "eight",
      "nine",
      "ten",
      "eleven",
    ].concat(["twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]);
    expect(intro).toContain(`${words[roles.length] ?? String(roles.length)} agent roles`);
    for (const role of roles) expect(intro).toMatch(new RegExp(`\\b${role}\\b`));
  });

  test("it names every workflow of the registry, each with its page", () => {
    for (const name of WorkflowName.options) {
      expect(readme).toContain(`[${name}](docs/workflows/${name}.md)`);
      expect(existsSync(join(root, `docs/workflows/${name}.md`)), name).toBe(true);
    }
  });

  test("every relative link of the README and of docs/ points to a file that exists", () => {
    const pages = [
      "README.md",
      ...readdirSync(join(root, "docs"), { recursive: true })
        .map(String)
        .filter((f) => f.endsWith(".md"))
        .map((f) => `docs/${f}`),
    ];
    const broken: string[] = [];
    for (const page of pages) {
      for (const m of read(page).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(root, dirname(page), target))) broken.push(`${page} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
