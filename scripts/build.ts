import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build as esbuild, type Metafile, type Plugin } from "esbuild";
import { buildVendor, isVendored, NODE_BUNDLE, vendorFile } from "./build-vendor.js";
import { BUNDLED_SERVICES, buildProcesses } from "./build-process.js";
import { ESM_MAIN } from "./launcher.js";
import { ROOT, rootOf, sourceRoots, type SourceRoot } from "./layout.js";

// `pnpm build`: the JavaScript production runs, in each package's and role folder's `dist/`.
// Node's ES module loader costs about a millisecond per file, so a process should load few:
//  - each package is bundled into its front door: `<pkg>/src/index.ts` → `<pkg>/dist/index.js`, a
//    service's `src/main.ts` → `dist/main.js` (`dist/main.esm.js` for the services that also get a
//    process bundle, build-process.ts, whose `main.js` is the launcher), a role folder's `role.ts` →
//    `dist/role.js`. A module
//    the code imports lazily (`import("./mcp/sdk.js")`) is bundled on its own, at its path in
//    `dist/`, and stays lazy. Every front door sits at the top of `src/` (or the role folder), so
//    bundled code runs with an `import.meta.url` at the top of `dist/`: a path worked out from
//    there (role folders beside the agent, the gateway's public/, the analyst's describe.py, the
//    tools' `packageFile()` for their workers and the Python child) points where it does from the
//    top of `src/` under tsx. A module deeper in `src/` must not find files beside itself. The
//    plain `.mjs`/`.py` files (workers, scripts) are copied to their own paths in `dist/`;
//  - imports of `@agentmesh/<name>` (whose exports point at src/*.ts for tsx and vitest) become the
//    relative path of that package's compiled front door, so each workspace package is one module,
//    loaded once per process by the agent and the role modules it imports at run time alike (one
//    `AgentmeshError` class);
//  - the npm packages every service loads at start (zod, @nats-io/*, ioredis, pino, …; VENDORED
//    in build-vendor.ts) are bundled once into `dist/vendor/` at the root, and imports of them
//    point there (one zod registry per process); any other npm package stays a bare import and
//    resolves at run time from the package's own node_modules, as under tsx (pnpm links each
//    package's dependencies into its node_modules; nothing is hoisted to the root).
//
//   pnpm build           compiles into the dist/ folders (deleted first)

const isSource = (name: string): boolean =>
  name.endsWith(".ts") && !name.endsWith(".d.ts") && !name.endsWith(".test.ts") && name !== "testing.ts";
/** Plain JavaScript the compiled code loads by path or import (workers, the exact evaluator, scripts a tool runs). */
const isAsset = (name: string): boolean => /\.(mjs|py)$/.test(name);
const SKIPPED_DIRS = new Set(["test-support", "node_modules", "dist"]);

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
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as {
      name?: string;
      exports?: Record<string, string>;
    };
    if (!pkg.name?.startsWith("@agentmesh/")) continue;
    for (const [key, file] of Object.entries(pkg.exports ?? {})) {
      const source = resolve(pkgDir, file);
      const rel = relative(r.src, source);
      if (rel.startsWith("..")) throw new Error(`${pkg.name}: export ${key} (${file}) is outside src/`);
      targets.set(
        key === "." ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, "")}`,
        join(r.out, rel.replace(/\.ts$/, ".js")),
      );
    }
  }
  return targets;
}

/**
 * The entries of a root: the package's exports (its `./testing` twins are not shipped)
 * and a service's `src/main.ts`, or a role folder's `role.ts`.
 */
function bundleEntries(r: SourceRoot): string[] {
  if (!r.recursive) return [join(r.src, "role.ts")];
  const pkg = JSON.parse(readFileSync(join(dirname(r.src), "package.json"), "utf8")) as {
    exports?: Record<string, string>;
  };
  const files = Object.values(pkg.exports ?? {})
    .map((f) => resolve(dirname(r.src), f))
    .filter((f) => isSource(basename(f)));
  const main = join(r.src, "main.ts");
  return [...new Set(existsSync(main) ? [...files, main] : files)];
}

/**
 * Where a source file's compiled module goes: `<src>/a/b.ts` → `<out>/a/b.js`; the `src/main.ts` of
 * a service with a process bundle → `main.esm.js` (its `main.js` is the launcher, build-process.ts).
 */
const outFile = (r: SourceRoot, source: string): string => {
  if (
    relative(r.src, source) === "main.ts" &&
    (BUNDLED_SERVICES as readonly string[]).includes(basename(dirname(r.src)))
  )
    return join(r.out, ESM_MAIN);
  return join(r.out, relative(r.src, source).replace(/\.ts$/, ".js"));
};

/** A relative import path from the compiled file `from` to the file `to`. */
function relativeImport(from: string, to: string): string {
  const rel = relative(dirname(from), to).split(sep).join("/");
  return rel.startsWith(".") ? rel : `./${rel}`;
}

/** Marks the plugin's own look-ups (esbuild's resolution, not the plugin's rewrite). */
const RESOLVING = Symbol("resolving");

/** What the plugin learns while it resolves: the vendored specifiers in use and the lazy modules to bundle on their own. */
interface Found {
  /** Vendored specifier → the folder of a module importing it, and the file it resolves to. */
  readonly vendor: Map<string, { readonly dir: string; readonly file: string }>;
  /** Source files imported with `import()` from a bundled root, with their root. */
  readonly lazy: Map<string, SourceRoot>;
}

/**
 * Bundles a root's own modules, except `import()` of one, which stays lazy (that module is
 * bundled on its own). Rewrites `@agentmesh/*` to the relative path of the compiled front door and
 * a vendored npm specifier to its file in `dist/vendor/`; leaves other npm packages and Node's
 * built-ins as they are written. `outOf(root)` is the compiled file the imports are written in.
 */
function importsPlugin(
  root: string,
  roots: readonly SourceRoot[],
  targets: ReadonlyMap<string, string>,
  found: Found,
  outOf: (r: SourceRoot) => string,
): Plugin {
  return {
    name: "agentmesh-imports",
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point" || args.pluginData === RESOLVING) return undefined;
        const r = rootOf(roots, args.importer);
        if (!r) return { errors: [{ text: `${args.importer}: not in a source root` }] };
        const from = outOf(r);
        if (args.path.startsWith(".")) {
          if (args.kind !== "dynamic-import") return undefined;
          const source = resolve(dirname(args.importer), args.path.replace(/\.js$/, ".ts"));
          found.lazy.set(source, r);
          return { path: relativeImport(from, outFile(r, source)), external: true };
        }
        if (args.path.startsWith("@agentmesh/")) {
          const target = targets.get(args.path);
          if (!target) return { errors: [{ text: `${args.path} is not an export of a workspace package` }] };
          return { path: relativeImport(from, target), external: true };
        }
        if (isVendored(args.path)) {
          // one bundle stands for every importer's copy: they must all be the same file (one version)
          const file = await b.resolve(args.path, {
            resolveDir: args.resolveDir,
            kind: args.kind,
            pluginData: RESOLVING,
          });
          if (file.errors.length) return { errors: file.errors };
          const seen = found.vendor.get(args.path);
          if (seen && seen.file !== file.path)
            return {
              errors: [
                {
                  text: `${args.path} resolves to ${file.path} here and to ${seen.file} from ${seen.dir}: a vendored package must be one version in the workspace`,
                },
              ],
            };
          if (!seen) found.vendor.set(args.path, { dir: args.resolveDir, file: file.path });
          return { path: relativeImport(from, vendorFile(root, args.path)), external: true };
        }
        return { path: args.path, external: true };
      });
    },
  };
}

/**
 * Fails when a source file went into two compiled files of one root: its module-level state would
 * exist twice in a process that loads both. A service's `main.js` and `index.js` may share (no
 * process loads both: the service runs main, `services/local` imports the front doors).
 */
function checkDisjoint(meta: Metafile, root: string): void {
  const owner = new Map<string, string>();
  for (const [out, o] of Object.entries(meta.outputs)) {
    if (out.endsWith(".map")) continue;
    for (const input of Object.keys(o.inputs)) {
      const prev = owner.get(input);
      const pair =
        prev !== undefined &&
        dirname(prev) === dirname(out) &&
        /^index\.js,main(\.esm)?\.js$/.test([basename(prev), basename(out)].sort().join());
      if (prev !== undefined && prev !== out && !pair)
        throw new Error(`build: ${relative(root, resolve(root, input))} is bundled into both ${prev} and ${out}`);
      owner.set(input, out);
    }
  }
}

export interface BuildResult {
  /** Compiled files written (front doors, mains, role modules, lazy modules; not the vendor files). */
  readonly files: number;
  readonly assets: number;
  /** Vendored import specifiers bundled into `dist/vendor/`. */
  readonly vendored: number;
  /** Process bundles written (build-process.ts). */
  readonly processes: number;
  readonly ms: number;
}

/** Compiles every source root into its dist/ and the vendored npm packages into dist/vendor/ (deleting what was there). */
export async function buildAll(root = ROOT): Promise<BuildResult> {
  const t0 = performance.now();
  const roots = sourceRoots(root);
  rmSync(join(root, "dist"), { recursive: true, force: true });
  const entries = new Map<string, string>();
  let assets = 0;
  for (const r of roots) {
    rmSync(r.out, { recursive: true, force: true });
    for (const source of bundleEntries(r)) {
      if (dirname(source) !== r.src)
        throw new Error(
          `build: ${relative(root, source)} is an entry, so it must sit at the top of ${relative(root, r.src)}/`,
        );
      entries.set(source, outFile(r, source));
    }
    for (const rel of filesOf(r, isAsset)) {
      mkdirSync(dirname(join(r.out, rel)), { recursive: true });
      copyFileSync(join(r.src, rel), join(r.out, rel));
      assets++;
    }
  }
  const found: Found = { vendor: new Map(), lazy: new Map() };
  const targets = workspaceTargets(roots);
  const inputs: Metafile["inputs"] = {};
  const outputs: Metafile["outputs"] = {};
  const run = async (
    batch: readonly (readonly [string, string])[],
    outOf: (r: SourceRoot) => string,
  ): Promise<void> => {
    const result = await esbuild({
      absWorkingDir: root,
      entryPoints: batch.map(([source, out]) => ({ in: source, out: relative(root, out).replace(/\.js$/, "") })),
      outdir: root,
      ...NODE_BUNDLE,
      metafile: true,
      plugins: [importsPlugin(root, roots, targets, found, outOf)],
    });
    if (result.warnings.length) throw new Error(`build: ${result.warnings.map((w) => w.text).join("; ")}`);
    Object.assign(inputs, result.metafile.inputs);
    Object.assign(outputs, result.metafile.outputs);
  };
  // every entry at the top of its dist/
  await run([...entries], (r) => join(r.out, "index.js"));
  // then each lazily imported module, found while building the others, at its own path
  const unbuilt = () => [...found.lazy].filter(([s]) => !entries.has(s));
  for (let lazy = unbuilt(); lazy.length > 0; lazy = unbuilt()) {
    for (const [source, r] of lazy) {
      const out = outFile(r, source);
      entries.set(source, out);
      await run([[source, out]], () => out);
    }
  }
  checkDisjoint({ inputs, outputs }, root);
  const vendored = await buildVendor(root, new Map([...found.vendor].map(([spec, v]) => [spec, v.dir])));
  const processes = await buildProcesses(root, roots);
  return { files: entries.size, assets, vendored, processes, ms: Math.round(performance.now() - t0) };
}

if (resolve(process.argv[1] ?? "") === fileURLToPath(import.meta.url)) {
  try {
    const r = await buildAll();
    console.log(
      `built ${r.files} files, ${r.assets} assets, ${r.vendored} vendored npm imports and ${r.processes} process bundles (code cache primed) into the dist/ folders in ${r.ms} ms`,
    );
  } catch (err) {
    // esbuild's own error lists every failed file with its location
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}
