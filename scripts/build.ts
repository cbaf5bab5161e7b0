import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build as esbuild, type Plugin } from "esbuild";

// `pnpm build`: the JavaScript production runs. Every source file is compiled on its own, one
// .js (and .js.map) per .ts, into its package's `dist/`: `<pkg>/src/a/b.ts` → `<pkg>/dist/a/b.js`,
// a role folder's `services/<role>/x.ts` → `services/<role>/dist/x.js`. Nothing is bundled, so
//  - a compiled file sits as deep in its package as its source, and every path a module works
//    out from `import.meta.url` (role folders beside the agent, the gateway's public/, the tools'
//    workers, the analyst's describe.py) points where it did;
//  - npm packages resolve from the same package folder as under tsx (pnpm links each package's
//    own dependencies into its node_modules; nothing is hoisted to the root);
//  - each workspace package is loaded once per process, by the agent and the role modules it
//    imports at run time alike (one zod registry, one `AgentmeshError` class).
// Imports of `@agentmesh/<name>` (whose exports point at src/*.ts for tsx and vitest) are
// rewritten to the relative path of that package's compiled front door.
//
//   pnpm build           compiles into the dist/ folders (deleted first)

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** One folder of sources and the folder its compiled files go to. */
interface SourceRoot {
  readonly src: string;
  readonly out: string;
  /** Only the folder's own files (a role folder), or its whole tree (a package's src/). */
  readonly recursive: boolean;
}

const isSource = (name: string): boolean => name.endsWith(".ts") && !name.endsWith(".d.ts") && !name.endsWith(".test.ts") && name !== "testing.ts";
/** Plain JavaScript the compiled code loads by path or import (workers, the exact evaluator, scripts a tool runs). */
const isAsset = (name: string): boolean => /\.(mjs|py)$/.test(name);
const SKIPPED_DIRS = new Set(["test-support", "node_modules", "dist"]);

/** Every package's src/ and every role folder (a services/ folder with a role.ts). */
export function sourceRoots(root = ROOT): SourceRoot[] {
  const roots: SourceRoot[] = [];
  for (const group of ["packages", "services"]) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const dir = join(root, group, name);
      if (existsSync(join(dir, "src"))) roots.push({ src: join(dir, "src"), out: join(dir, "dist"), recursive: true });
      else if (existsSync(join(dir, "role.ts"))) roots.push({ src: dir, out: join(dir, "dist"), recursive: false });
    }
  }
  return roots;
}

/** The files of one source root, relative to it, sorted. */
function filesOf(r: SourceRoot, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(r.src, rel), { withFileTypes: true })) {
      const path = rel ? join(rel, e.name) : e.name;
      if (e.isDirectory()) {
        if (r.recursive && !SKIPPED_DIRS.has(e.name)) walk(path);
      } else if (keep(e.name)) out.push(path);
    }
  };
  walk("");
  return out.sort();
}

/** `@agentmesh/<name>[/<entry>]` → the absolute path of the compiled file its export names. */
function workspaceTargets(roots: readonly SourceRoot[]): Map<string, string> {
  const targets = new Map<string, string>();
  for (const r of roots.filter((x) => x.recursive)) {
    const pkgDir = dirname(r.src);
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { name?: string; exports?: Record<string, string> };
    if (!pkg.name?.startsWith("@agentmesh/")) continue;
    for (const [key, file] of Object.entries(pkg.exports ?? {})) {
      const source = resolve(pkgDir, file);
      const rel = relative(r.src, source);
      if (rel.startsWith("..")) throw new Error(`${pkg.name}: export ${key} (${file}) is outside src/`);
      targets.set(key === "." ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, "")}`, join(r.out, rel.replace(/\.ts$/, ".js")));
    }
  }
  return targets;
}

/**
 * Leaves every import as it is written (npm packages and sibling modules resolve at run time)
 * except `@agentmesh/*`, which becomes a relative path to the compiled front door.
 */
function importsPlugin(targets: ReadonlyMap<string, string>, outFileOf: ReadonlyMap<string, string>): Plugin {
  return {
    name: "agentmesh-imports",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return undefined;
        if (!args.path.startsWith("@agentmesh/")) return { path: args.path, external: true };
        const target = targets.get(args.path);
        if (!target) return { errors: [{ text: `${args.path} is not an export of a workspace package` }] };
        const from = outFileOf.get(args.importer);
        if (!from) return { errors: [{ text: `${args.importer}: no output file` }] };
        let rel = relative(dirname(from), target).split(sep).join("/");
        if (!rel.startsWith(".")) rel = `./${rel}`;
        return { path: rel, external: true };
      });
    },
  };
}

export interface BuildResult {
  readonly files: number;
  readonly assets: number;
  readonly ms: number;
}

/** Compiles every source root into its dist/ (deleting what was there). */
export async function buildAll(root = ROOT): Promise<BuildResult> {
  const t0 = performance.now();
  const roots = sourceRoots(root);
  const entries: { in: string; out: string }[] = [];
  const outFileOf = new Map<string, string>();
  let assets = 0;
  for (const r of roots) {
    rmSync(r.out, { recursive: true, force: true });
    for (const rel of filesOf(r, isSource)) {
      const source = join(r.src, rel);
      const out = join(r.out, rel.replace(/\.ts$/, ""));
      entries.push({ in: source, out: relative(root, out) });
      outFileOf.set(source, `${out}.js`);
    }
    for (const rel of filesOf(r, isAsset)) {
      mkdirSync(dirname(join(r.out, rel)), { recursive: true });
      copyFileSync(join(r.src, rel), join(r.out, rel));
      assets++;
    }
  }
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints: entries,
    outdir: root,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "linked",
    sourcesContent: false,
    logLevel: "silent",
    plugins: [importsPlugin(workspaceTargets(roots), outFileOf)],
  });
  if (result.warnings.length) throw new Error(`build: ${result.warnings.map((w) => w.text).join("; ")}`);
  return { files: entries.length, assets, ms: Math.round(performance.now() - t0) };
}

if (resolve(process.argv[1] ?? "") === fileURLToPath(import.meta.url)) {
  try {
    const r = await buildAll();
    console.log(`built ${r.files} modules and ${r.assets} assets into the dist/ folders in ${r.ms} ms`);
  } catch (err) {
    // esbuild's own error lists every failed file with its location
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}
