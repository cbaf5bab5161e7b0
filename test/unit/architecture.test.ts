/**
 * Enforces ARCHITECTURE.md's `package | role | may depend on` table against the repository:
 * every workspace folder has a row, every `@agentmesh/*` dependency in a package.json and every
 * import in a package's source is allowed by its row. The rules are pure functions over
 * (row, manifest, imports), and the last block feeds them forbidden inputs to prove they bite.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const WORKSPACE_DIRS = ["packages", "services"] as const;
const SOURCE_EXT = /\.(?:[cm]?ts|[cm]?js)$/;
const SCOPE = "@agentmesh/";
const TEST_FILE = /\.test\.[cm]?[jt]s$/;

/** One row of the table. `external` is non-empty only for closed rows (contracts: zod only). */
interface Row {
  readonly dir: string;
  readonly name: string;
  readonly internal: readonly string[];
  readonly external: readonly string[];
}

interface Manifest {
  readonly name?: string;
  readonly exports?: Record<string, unknown> | string;
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
}

/** An import found in a source file, with the file path relative to the repository root. */
interface FoundImport {
  readonly file: string;
  readonly specifier: string;
}

function parseTable(markdown: string): Row[] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => /^\|\s*package\s*\|\s*role\s*\|\s*may depend on\s*\|/.test(l));
  if (start < 0) throw new Error("ARCHITECTURE.md has no `package | role | may depend on` table");
  const cells: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    cells.push(
      line
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  const dirOf = (c: string[]): string => (c[0] ?? "").replaceAll("`", "");
  const names = new Set(cells.map((c) => dirOf(c).split("/").pop() ?? ""));
  return cells.map((c) => {
    if (c.length !== 3) throw new Error(`ARCHITECTURE.md: row ${JSON.stringify(c)} must have 3 cells`);
    const dir = dirOf(c);
    const deps = [...(c[2] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");
    return {
      dir,
      name: dir.split("/").pop() ?? "",
      internal: deps.filter((d) => names.has(d)),
      external: deps.filter((d) => !names.has(d)),
    };
  });
}

/** Package name of a bare specifier: `zod/v4` → `zod`, `@scope/x/y` → `@scope/x`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? "");
}

function isBuiltin(specifier: string): boolean {
  return specifier.startsWith("node:") || builtinModules.includes(packageOf(specifier));
}

/** Violations in a package.json's dependency lists. */
function checkManifest(row: Row, manifest: Manifest): string[] {
  const problems: string[] = [];
  if (manifest.name !== `${SCOPE}${row.name}`) {
    problems.push(`${row.dir}/package.json: name is ${JSON.stringify(manifest.name)}, expected "${SCOPE}${row.name}"`);
  }
  const lists = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"] as const;
  for (const list of lists) {
    for (const dep of Object.keys(manifest[list] ?? {})) {
      if (dep.startsWith(SCOPE)) {
        const target = dep.slice(SCOPE.length);
        if (!row.internal.includes(target)) {
          problems.push(
            `${row.dir}/package.json ${list}: ${dep} is not in its "may depend on" (${row.internal.join(", ") || "none"})`,
          );
        }
      } else if (row.external.length > 0 && !row.external.includes(dep)) {
        problems.push(
          `${row.dir}/package.json ${list}: ${dep} — ${row.dir} may depend only on ${row.external.join(", ")}`,
        );
      }
    }
  }
  return problems;
}

/**
 * Violations among one package's imports. `exportsOf(name)` lists a workspace package's entries;
 * `testOnly(file)` says whether a file is test code (which may use the shared test/setup).
 */
function checkImports(
  row: Row,
  manifest: Manifest,
  imports: readonly FoundImport[],
  exportsOf: (name: string) => readonly string[] | null,
  testOnly: (file: string) => boolean,
): string[] {
  const problems: string[] = [];
  const declared = new Set(
    [manifest.dependencies, manifest.devDependencies, manifest.peerDependencies, manifest.optionalDependencies].flatMap(
      (d) => Object.keys(d ?? {}),
    ),
  );
  for (const { file, specifier } of imports) {
    const at = `${file}: import "${specifier}"`;
    if (specifier.startsWith(".")) {
      const target = relative(ROOT, resolve(ROOT, dirname(file), specifier))
        .split(sep)
        .join("/");
      const inside = target.startsWith(`${row.dir}/`);
      // Test code may use the repository's shared test infrastructure (test/setup).
      const sharedTestInfra = testOnly(file) && target.startsWith("test/");
      if (!inside && !sharedTestInfra) problems.push(`${at} leaves ${row.dir}; import another package by its name`);
      continue;
    }
    if (specifier.startsWith(SCOPE)) {
      const [name = "", ...rest] = specifier.slice(SCOPE.length).split("/");
      const sub = rest.join("/");
      if (sub !== "" && sub !== "testing") {
        problems.push(`${at} is a deep import; use "${SCOPE}${name}" or "${SCOPE}${name}/testing"`);
        continue;
      }
      if (name === row.name) continue;
      if (!row.internal.includes(name)) {
        problems.push(
          `${at} — ARCHITECTURE.md allows ${row.dir} only: ${row.internal.join(", ") || "no workspace package"}`,
        );
        continue;
      }
      if (!declared.has(`${SCOPE}${name}`))
        problems.push(`${at} — ${SCOPE}${name} is not declared in ${row.dir}/package.json`);
      const entries = exportsOf(name);
      if (entries && !entries.includes(sub === "" ? "." : `./${sub}`)) {
        problems.push(`${at} — ${SCOPE}${name} does not export "./${sub}"`);
      }
      continue;
    }
    if (row.external.length > 0 && (isBuiltin(specifier) || !row.external.includes(packageOf(specifier)))) {
      problems.push(`${at} — ${row.dir} may import only ${row.external.join(", ")}`);
    }
  }
  return problems;
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    // dist/: what `pnpm build` compiled from these sources
    if (e.name === "node_modules" || e.name === "dist" || e.name.startsWith(".")) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return SOURCE_EXT.test(e.name) && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Every module specifier in a file: static, re-export, dynamic import, require. */
function importsOf(path: string): FoundImport[] {
  const info = ts.preProcessFile(readFileSync(path, "utf8"), true, true);
  const file = relative(ROOT, path).split(sep).join("/");
  return info.importedFiles.map((f) => ({ file, specifier: f.fileName }));
}

/** The file a relative specifier names (`./x.js` is `./x.ts` in source), or null. */
function resolveRelative(fromFile: string, specifier: string): string | null {
  const base = resolve(ROOT, dirname(fromFile), specifier);
  const candidates = [base, base.replace(/\.([cm]?)js$/, ".$1ts"), `${base}.ts`, join(base, "index.ts")];
  const found = candidates.find((c) => existsSync(c) && statSync(c).isFile());
  return found ? relative(ROOT, found).split(sep).join("/") : null;
}

/**
 * Files reachable through relative imports from a package's shipped entry points: the `.`
 * export, `src/main.ts` and `bin/`. Everything else in the package (tests, their helpers) is
 * test code.
 */
function productionFiles(dir: string, manifest: Manifest, imports: readonly FoundImport[]): Set<string> {
  const main = typeof manifest.exports === "string" ? manifest.exports : manifest.exports?.["."];
  const roots = [typeof main === "string" ? main : "./src/index.ts", "./src/main.ts"]
    .map((r) => `${dir}/${r.replace(/^\.\//, "")}`)
    .concat(imports.map((i) => i.file).filter((f) => f.startsWith(`${dir}/bin/`)))
    .filter((f) => existsSync(join(ROOT, f)));
  const byFile = new Map<string, string[]>();
  for (const { file, specifier } of imports) {
    if (specifier.startsWith(".")) byFile.set(file, [...(byFile.get(file) ?? []), specifier]);
  }
  const seen = new Set<string>();
  const stack = [...roots];
  for (let file = stack.pop(); file !== undefined; file = stack.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of byFile.get(file) ?? []) {
      const target = resolveRelative(file, spec);
      if (target?.startsWith(`${dir}/`)) stack.push(target);
    }
  }
  return seen;
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(ROOT, dir, "package.json"), "utf8")) as Manifest;
}

function exportEntries(manifest: Manifest): string[] {
  const e = manifest.exports;
  if (e === undefined) return ["."];
  if (typeof e === "string") return ["."];
  return Object.keys(e).some((k) => k.startsWith(".")) ? Object.keys(e) : ["."];
}

/** The `services/<role>` row stands for every role folder: a folder of services/ with a role.ts. */
const ROLE_ROW = "services/<role>";
const isRoleFolder = (dir: string): boolean => existsSync(join(ROOT, dir, "role.ts"));
const roleFolders = readdirSync(join(ROOT, "services"))
  .map((n) => `services/${n}`)
  .filter(isRoleFolder);
const rows = parseTable(readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8")).flatMap((r) =>
  r.dir === ROLE_ROW ? roleFolders.map((dir) => ({ ...r, dir, name: dir.split("/").pop() ?? "" })) : [r],
);
/** A role folder is not a package: it resolves its dependencies through the repository root's package.json. */
const manifestDir = (dir: string): string => (isRoleFolder(dir) ? "." : dir);
const folders = WORKSPACE_DIRS.flatMap((d) =>
  readdirSync(join(ROOT, d))
    .filter((n) => !n.startsWith(".") && statSync(join(ROOT, d, n)).isDirectory())
    .map((n) => `${d}/${n}`),
);
const rowsWithManifest = rows.filter((r) => existsSync(join(ROOT, r.dir, "package.json")));
const exportsByName = new Map(rowsWithManifest.map((r) => [r.name, exportEntries(readManifest(r.dir))]));
const exportsOf = (name: string): readonly string[] | null => exportsByName.get(name) ?? null;

describe("ARCHITECTURE.md dependency table", () => {
  it("has one row per workspace folder, and no row without a folder", () => {
    const dirs = rows.map((r) => r.dir);
    expect(new Set(dirs).size, "duplicate rows").toBe(dirs.length);
    expect(
      folders.filter((f) => !dirs.includes(f)),
      "folders missing from ARCHITECTURE.md",
    ).toEqual([]);
    expect(
      dirs.filter((d) => !folders.includes(d)),
      "rows whose folder does not exist",
    ).toEqual([]);
  });

  it("names only packages that have rows, and contracts may use zod only", () => {
    const contracts = rows.find((r) => r.dir === "packages/contracts");
    expect(contracts).toMatchObject({ internal: [], external: ["zod"] });
    for (const row of rows.filter((r) => r !== contracts)) {
      expect(row.external, `${row.dir}: unknown names in "may depend on"`).toEqual([]);
      expect(row.internal.includes(row.name), `${row.dir} lists itself`).toBe(false);
    }
  });

  it("has no cycles between packages", () => {
    const byName = new Map(rows.map((r) => [r.name, r]));
    const visit = (name: string, path: readonly string[]): void => {
      if (path.includes(name)) throw new Error(`cycle: ${[...path, name].join(" → ")}`);
      for (const dep of byName.get(name)?.internal ?? []) visit(dep, [...path, name]);
    };
    for (const row of rows) expect(() => visit(row.name, [])).not.toThrow();
  });

  it.each(rows.filter((r) => !isRoleFolder(r.dir)).map((r) => [r.dir, r] as const))(
    "%s: package.json dependencies follow the table",
    (_dir, row) => {
      if (!existsSync(join(ROOT, row.dir, "package.json"))) return; // reported by the first test
      expect(checkManifest(row, readManifest(row.dir))).toEqual([]);
    },
  );

  it("every role folder is a plain folder (no package.json): the agent process loads it by name", () => {
    expect(roleFolders.length).toBeGreaterThan(0);
    for (const dir of roleFolders) expect(existsSync(join(ROOT, dir, "package.json")), dir).toBe(false);
  });

  it.each(rows.map((r) => [r.dir, r] as const))("%s: imports follow the table", (_dir, row) => {
    if (!existsSync(join(ROOT, manifestDir(row.dir), "package.json"))) return;
    const manifest = readManifest(manifestDir(row.dir));
    const imports = sourceFiles(join(ROOT, row.dir)).flatMap(importsOf);
    const production = isRoleFolder(row.dir)
      ? new Set(imports.map((i) => i.file).filter((f) => !TEST_FILE.test(f)))
      : productionFiles(row.dir, manifest, imports);
    expect(checkImports(row, manifest, imports, exportsOf, (f) => !production.has(f))).toEqual([]);
  });
});

describe("the table's checks reject forbidden dependencies", () => {
  const workflows: Row = { dir: "packages/workflows", name: "workflows", internal: ["contracts"], external: [] };
  const contracts: Row = { dir: "packages/contracts", name: "contracts", internal: [], external: ["zod"] };
  const ok: Manifest = {
    name: "@agentmesh/workflows",
    dependencies: { "@agentmesh/contracts": "workspace:*", zod: "4" },
  };
  const at = (specifier: string, file = "packages/workflows/src/a.ts"): FoundImport[] => [{ file, specifier }];
  const entries = (name: string): readonly string[] | null => (name === "llm" ? [".", "./testing"] : ["."]);
  const testOnly = (file: string): boolean => TEST_FILE.test(file);

  it("accepts what the table allows", () => {
    expect(checkManifest(workflows, ok)).toEqual([]);
    expect(
      checkImports(workflows, ok, [...at("@agentmesh/contracts"), ...at("./b.js"), ...at("zod")], entries, testOnly),
    ).toEqual([]);
    expect(checkManifest(contracts, { name: "@agentmesh/contracts", dependencies: { zod: "4" } })).toEqual([]);
  });

  it("rejects a forbidden package.json dependency", () => {
    const bad = { ...ok, devDependencies: { "@agentmesh/session-store": "workspace:*" } };
    expect(checkManifest(workflows, bad)).toHaveLength(1);
    expect(
      checkManifest(contracts, { name: "@agentmesh/contracts", dependencies: { zod: "4", pino: "10" } }),
    ).toHaveLength(1);
    expect(checkManifest(workflows, { ...ok, name: "@agentmesh/flows" })).toHaveLength(1);
  });

  it("rejects forbidden, deep, undeclared and cross-package imports", () => {
    expect(checkImports(workflows, ok, at("@agentmesh/session-store"), entries, testOnly)).toHaveLength(1);
    expect(
      checkImports(workflows, ok, at("@agentmesh/llm/testing", "packages/workflows/src/a.test.ts"), entries, testOnly),
    ).toHaveLength(1);
    expect(checkImports(workflows, ok, at("@agentmesh/contracts/src/subjects.js"), entries, testOnly)).toHaveLength(1);
    expect(
      checkImports(workflows, ok, at("../../contracts/src/index.js", "packages/workflows/src/a.ts"), entries, testOnly),
    ).toHaveLength(1);
    expect(
      checkImports(
        workflows,
        ok,
        at("../../contracts/src/x.js", "packages/workflows/src/a.test.ts"),
        entries,
        testOnly,
      ),
    ).toHaveLength(1);
    expect(
      checkImports(workflows, ok, at("../../../test/setup/infra.js", "packages/workflows/src/a.ts"), entries, testOnly),
    ).toHaveLength(1);
    expect(
      checkImports(
        workflows,
        ok,
        at("../../../test/setup/infra.js", "packages/workflows/src/a.int.test.ts"),
        entries,
        testOnly,
      ),
    ).toEqual([]);
    expect(
      checkImports(workflows, { name: "@agentmesh/workflows" }, at("@agentmesh/contracts"), entries, testOnly),
    ).toHaveLength(1);
    expect(checkImports(workflows, ok, at("@agentmesh/contracts/testing"), entries, testOnly)).toHaveLength(1);
  });

  it("keeps closed rows closed (contracts: zod only)", () => {
    const m: Manifest = { name: "@agentmesh/contracts", dependencies: { zod: "4" } };
    const file = "packages/contracts/src/a.ts";
    expect(
      checkImports(contracts, m, [...at("zod", file), ...at("zod/v4", file), ...at("./x.js", file)], entries, testOnly),
    ).toEqual([]);
    expect(checkImports(contracts, m, at("node:crypto", file), entries, testOnly)).toHaveLength(1);
    expect(checkImports(contracts, m, at("fs", file), entries, testOnly)).toHaveLength(1);
    expect(checkImports(contracts, m, at("@agentmesh/llm", file), entries, testOnly)).toHaveLength(1);
  });

  it("tells shipped code from test code by reachability from the entry points", () => {
    const manifest = readManifest("packages/contracts");
    const imports = sourceFiles(join(ROOT, "packages/contracts")).flatMap(importsOf);
    const production = productionFiles("packages/contracts", manifest, imports);
    expect(production).toContain("packages/contracts/src/index.ts");
    expect(production).toContain("packages/contracts/src/subjects.ts");
    expect([...production].filter((f) => TEST_FILE.test(f))).toEqual([]);
  });

  it("finds imports of every kind in a file", () => {
    const info = ts.preProcessFile(
      'import a from "a"; import type { B } from "b"; export * from "c"; const d = await import("d"); import e = require("e");',
      true,
      true,
    );
    expect(info.importedFiles.map((f) => f.fileName)).toEqual(["a", "b", "c", "d", "e"]);
  });
});

describe("every test file runs", () => {
  it("each *.test.ts in packages/, services/ and test/ belongs to a vitest project", async () => {
    const { default: config } = (await import("../../vitest.config.js")) as {
      default: { test: { projects: Array<{ test: { include: string[]; exclude?: string[] } }> } };
    };
    const { matchesGlob } = await import("node:path");
    const projects = config.test.projects.map((p) => p.test);
    const files = ["packages", "services", "test"]
      .flatMap((d) => sourceFiles(join(ROOT, d)))
      .map((f) => relative(ROOT, f).split(sep).join("/"))
      .filter((f) => TEST_FILE.test(f));
    expect(files.length).toBeGreaterThan(50);
    const orphans = files.filter(
      (f) =>
        !projects.some(
          (p) => p.include.some((g) => matchesGlob(f, g)) && !(p.exclude ?? []).some((g) => matchesGlob(f, g)),
        ),
    );
    expect(orphans, "test files no vitest project runs").toEqual([]);
  });
});
