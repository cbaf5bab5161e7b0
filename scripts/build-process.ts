import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { build as esbuild, type Plugin } from "esbuild";
import { isVendored, zodEnglishOnly } from "./build-vendor.js";
import { BUNDLE_MARK, ESM_MAIN, PROCESS_BUNDLE } from "./launcher.js";
import { rootOf, serviceNodeOptions, sourceRoots, type SourceRoot } from "./layout.js";

// `pnpm build`'s second part: a process bundle for every service that runs as one process per
// replica (the coordinator, the gateway, and an agent per role), loaded by `dist/launcher.js`
// through V8's code cache (why: scripts/launcher.ts). Each bundle holds the whole process: the
// workspace packages from their sources (one copy each, so one module instance per process), the
// role module of an agent (evaluated when the agent loads its roles, as the ES module main imports
// it), and the npm packages the services load at start (VENDORED). Other npm packages (openai, the
// OpenTelemetry SDK, the MCP SDK, …) stay outside: at run time they are required from the
// importing package's folder, where Node finds them as it does for the ES module build (in their
// CommonJS form where a package has one). A module that finds files by `import.meta.url` sees the
// URL it has in the ES module build (the top of its package's dist/).
// The service's `main.js` becomes a few lines that call the launcher; its ES module main is kept as
// `main.esm.js` for what has no bundle (an agent running several roles).

/** Services whose main runs a process bundle; every role folder gets one too (run by the agent's main). */
export const BUNDLED_SERVICES = ["coordinator", "gateway", "agent"] as const;

/** What a bundle's entry runs, per kind. */
function entrySource(root: string, kind: { service: "coordinator" | "gateway" } | { role: string }): string {
  const path = (p: string) => JSON.stringify(join(root, p).split(sep).join("/"));
  if ("service" in kind) {
    const fn = kind.service === "coordinator" ? "coordinatorMain" : "gatewayMain";
    return `import { ${fn} } from ${path(`services/${kind.service}/src/main-wiring.ts`)};\nexport const main = () => ${fn}(process.env);\n`;
  }
  // the role module is imported lazily, when the agent loads its roles (after its config and ops
  // endpoint, inside its start-up error handling), as the ES module main does; `warm` loads it for priming
  return [
    `import { runAgentProcess } from ${path("services/agent/src/process.ts")};`,
    `const role = () => import(${path(`services/${kind.role}/role.ts`)}).then((m) => m.default);`,
    `export const warm = role;`,
    `export const main = () => runAgentProcess({ ${JSON.stringify(kind.role)}: role });`,
    "",
  ].join("\n");
}

/** The generated `main.js` of a bundled service: the launcher, nothing else. */
function launcherMain(root: string, service: string): string {
  const launcher = relative(join(root, "services", service, "dist"), join(root, "dist", "launcher.js"))
    .split(sep)
    .join("/");
  return [
    "// Written by pnpm build (scripts/build-process.ts): runs this service's process bundle through",
    `// V8's code cache (dist/launcher.js), or ${ESM_MAIN} where there is none for its arguments.`,
    `import { launch } from ${JSON.stringify(launcher)};`,
    `await launch(import.meta.url, ${JSON.stringify(service)});`,
    "",
  ].join("\n");
}

/** Where a source file's `import.meta.url` points in the ES module build: the top of its root's dist/ (build.ts puts every entry there). */
function esmUrlTarget(roots: readonly SourceRoot[], file: string): string | null {
  const r = rootOf(roots, file);
  if (!r) return null;
  return join(r.out, r.recursive ? "index.js" : "role.js");
}

/**
 * Rewrites `import.meta.url` in the workspace's sources to the URL that file has in the ES module
 * build, computed from the bundle's own location at run time; and leaves every npm package that is
 * not vendored outside, required at run time from the importing package's folder.
 */
function processPlugin(root: string, roots: readonly SourceRoot[], outDir: string): Plugin {
  const fromBundle = (file: string) => {
    const rel = relative(outDir, file).split(sep).join("/");
    return rel.startsWith(".") ? rel : `./${rel}`;
  };
  return {
    name: "agentmesh-process",
    setup(b) {
      b.onLoad({ filter: /\.(ts|mjs)$/ }, (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const text = readFileSync(args.path, "utf8");
        const loader = args.path.endsWith(".ts") ? "ts" : "js";
        if (!text.includes("import.meta")) return { contents: text, loader };
        const target = esmUrlTarget(roots, args.path);
        if (target === null)
          return {
            errors: [
              { text: `${relative(root, args.path)} uses import.meta outside a package's src/ or a role folder` },
            ],
          };
        const contents = text.replaceAll("import.meta.url", `__agentmeshUrl(${JSON.stringify(fromBundle(target))})`);
        if (contents.includes("import.meta"))
          return {
            errors: [
              { text: `${relative(root, args.path)}: only import.meta.url can be bundled into a process bundle` },
            ],
          };
        return { contents, loader };
      });
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (
          args.pluginData === "resolving" ||
          args.path.startsWith("node:") ||
          args.path.startsWith("@agentmesh/") ||
          isVendored(args.path)
        )
          return undefined;
        if (args.importer.includes(`${sep}node_modules${sep}`)) return undefined;
        const r = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, pluginData: "resolving" });
        if (r.errors.length) return { errors: r.errors };
        // a Node built-in without its node: prefix
        if (r.external) return undefined;
        // a module of its own that requires the package at run time from the importer's package folder
        return {
          path: JSON.stringify([relative(root, packageDirOf(root, args.importer)), args.path]),
          namespace: "agentmesh-external",
        };
      });
      b.onLoad({ filter: /.*/, namespace: "agentmesh-external" }, (args) => {
        const [dir, spec] = JSON.parse(args.path) as [string, string];
        return {
          contents: `module.exports = __agentmeshExternal(${JSON.stringify(fromBundle(join(root, dir)))}, ${JSON.stringify(spec)});\n`,
          loader: "js",
        };
      });
    },
  };
}

/** The folder of the workspace package a source file belongs to (its nearest package.json; role folders import no npm package themselves). */
function packageDirOf(root: string, file: string): string {
  for (let dir = dirname(file); dir.startsWith(root) && dir !== root; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  throw new Error(`build: ${relative(root, file)} is in no package`);
}

/** How long priming one bundle may take: loading it is well under a second. */
const PRIME_TIMEOUT_MS = 60_000;

/**
 * The V8 flag sets a cache is written for: the services' own (deploy/node-options: the e2e
 * harness, the bench, a container at the manifests' 512 MiB limit) and the image entrypoint's for a
 * 1 GiB container (the prod overlay's limit), which raises the old-space ceiling to half of it.
 */
function primedFlagSets(root: string): string[][] {
  const base = serviceNodeOptions(root).split(/\s+/).filter(Boolean);
  return [base, [...base, "--max-old-space-size=512"]];
}

/** Runs the launcher of each bundle in its priming mode once per flag set, two at a time. */
async function primeCaches(
  root: string,
  runs: readonly { readonly main: string; readonly args: readonly string[] }[],
): Promise<void> {
  const one = (main: string, args: readonly string[], flags: readonly string[]) =>
    new Promise<void>((resolve, reject) => {
      // the flags on the command line only: the cache is for exactly the services' flags
      const env: NodeJS.ProcessEnv = { ...process.env, AGENTMESH_CODE_CACHE: "prime" };
      delete env.NODE_OPTIONS;
      const child = spawn(process.execPath, [...flags, main, ...args], {
        cwd: root,
        env,
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      // priming loads modules and exits; anything longer is a bundle that started something
      const timer = setTimeout(() => child.kill("SIGKILL"), PRIME_TIMEOUT_MS);
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      child.on("error", reject);
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else
          reject(
            new Error(
              `build: priming the code cache of ${relative(root, main)} ${args.join(" ")} (${flags.join(" ")}) failed (${signal === "SIGKILL" ? `not done within ${PRIME_TIMEOUT_MS} ms` : `exit ${code}`}):\n${err.slice(-2000)}`,
            ),
          );
      });
    });
  const queue = primedFlagSets(root).flatMap((flags) => runs.map((r) => ({ ...r, flags })));
  const worker = async () => {
    for (let r = queue.shift(); r; r = queue.shift()) await one(r.main, r.args, r.flags);
  };
  await Promise.all([worker(), worker()]);
}

/**
 * Bundles one process from `entry` (TypeScript, resolved from the root) into `outFile`: a process
 * bundle as the launcher loads it. Exported for the tests, which bundle their own entries the same way.
 */
export async function bundleProcess(
  root: string,
  entry: string,
  outFile: string,
  roots: readonly SourceRoot[] = sourceRoots(root),
): Promise<void> {
  const out = dirname(outFile);
  const result = await esbuild({
    absWorkingDir: root,
    stdin: { contents: entry, resolveDir: root, sourcefile: "process-entry.ts", loader: "ts" },
    outfile: outFile,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node24",
    // a third smaller without comments and indentation: less to read, hash and hold at every start
    // (names stay; stack traces name the sources with --enable-source-maps, when the launcher
    // requires the bundle as a module)
    minifyWhitespace: true,
    sourcemap: "linked",
    sourcesContent: false,
    // npm packages outside the bundle are required (by __agentmeshExternal), not imported: a
    // script compiled through the vm module has no loader for import()
    supported: { "dynamic-import": false },
    // strict, as the ES module build runs all of it (the vendored CommonJS packages included)
    banner: {
      js: [
        BUNDLE_MARK,
        '"use strict";',
        'const __agentmeshUrl = (p) => require("node:url").pathToFileURL(require("node:path").join(__dirname, p)).href;',
        'const __agentmeshExternal = (dir, spec) => require("node:module").createRequire(require("node:path").join(__dirname, dir, "package.json"))(spec);',
      ].join("\n"),
    },
    logLevel: "silent",
    plugins: [zodEnglishOnly, processPlugin(root, roots, out)],
  });
  if (result.warnings.length)
    throw new Error(
      `build (process bundle ${relative(root, outFile)}): ${result.warnings.map((w) => `${w.location ? `${w.location.file}:${w.location.line}: ` : ""}${w.text}`).join("; ")}`,
    );
}

/** The role folders' names (the source roots that are a folder's own files). */
const roleNames = (roots: readonly SourceRoot[]) => roots.filter((r) => !r.recursive).map((r) => basename(r.src));

/**
 * Writes the process bundles, the launcher (`dist/launcher.js`) and the bundled services' `main.js`,
 * then primes each bundle's code cache. The ES module build (build.ts) has written `main.esm.js`.
 */
export async function buildProcesses(root: string, roots: readonly SourceRoot[]): Promise<number> {
  await esbuild({
    absWorkingDir: root,
    entryPoints: [join(root, "scripts", "launcher.ts")],
    outfile: join(root, "dist", "launcher.js"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    logLevel: "silent",
  });
  const kinds = [
    ...(["coordinator", "gateway"] as const).map((service) => ({
      kind: { service },
      out: join(root, "services", service, "dist"),
    })),
    ...roleNames(roots).map((role) => ({ kind: { role }, out: join(root, "services", role, "dist") })),
  ];
  // esbuild runs them on its own threads: one call each, all at once
  await Promise.all(
    kinds.map(({ kind, out }) => bundleProcess(root, entrySource(root, kind), join(out, PROCESS_BUNDLE), roots)),
  );
  for (const service of BUNDLED_SERVICES) {
    const dist = join(root, "services", service, "dist");
    if (!existsSync(join(dist, ESM_MAIN))) throw new Error(`build: services/${service}/dist/${ESM_MAIN} is missing`);
    writeFileSync(join(dist, "main.js"), launcherMain(root, service));
  }
  await primeCaches(root, [
    { main: join(root, "services", "coordinator", "dist", "main.js"), args: [] },
    { main: join(root, "services", "gateway", "dist", "main.js"), args: [] },
    ...roleNames(roots).map((role) => ({ main: join(root, "services", "agent", "dist", "main.js"), args: [role] })),
  ]);
  return kinds.length;
}
