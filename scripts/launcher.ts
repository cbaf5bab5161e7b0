// The start of a service process that has a process bundle (scripts/build-process.ts): the whole
// process, every workspace package and the npm packages it loads at start, in one CommonJS file
// that is compiled through V8's code cache. Node 20 keeps no compile cache for ES modules, and
// compiling a service's one and a half megabytes of JavaScript was the largest part of its start.
// Compiled by `pnpm build` into `dist/launcher.js`; it may import Node's built-ins only. With
// source maps on (`--enable-source-maps`) the bundle is required as the CommonJS module it is,
// without the cache, so stack traces name the TypeScript sources.
//
// The cache sits beside the bundle, one file per Node version and option set (`optionsKey`):
// `pnpm build` writes the ones for the services' own flags (deploy/node-options, and with the
// old-space ceiling the image's entrypoint sets for a 1 GiB container), and a process that finds
// none for its flags writes it a few seconds after it started (when the directory is writable). V8 checks a cache only against the
// source's length, and data that is not its own can crash the process, so each file carries the
// SHA-256 of the bundle it was made from and of its own data: anything else is ignored.
import { createHash, randomBytes } from "node:crypto";
import {
  accessSync,
  constants as fsConstants,
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Script } from "node:vm";

/** The bundle's file name beside each service's `main.js` (a role's: in its role folder's `dist/`). */
export const PROCESS_BUNDLE = "process.bundle.cjs";
/** The first line of every process bundle (the build's banner): how the launcher tells one. */
export const BUNDLE_MARK = "// agentmesh process bundle";
/** The function a bundle's source is wrapped in for the code cache: CommonJS's module parameters. */
const WRAPPER_HEAD = "(function (exports, require, module, __filename, __dirname) {";
const WRAPPER_TAIL = "\n})";
/** The ES module main a service without a process bundle for its arguments runs (an agent with several roles). */
export const ESM_MAIN = "main.esm.js";
/** A process that found no cache writes one this long after it started, when its own start-up code is compiled too. */
export const CACHE_WRITE_DELAY_MS = 5_000;

const MAGIC = Buffer.from("AMCC1");
const DIGEST = 32;
const sha256 = (b: Buffer | string): Buffer => createHash("sha256").update(b).digest();

/** What a process bundle exports: its main, which runs the service, and what priming runs besides its modules' top level. */
export interface BundleExports {
  readonly main?: () => Promise<void>;
  readonly warm?: () => Promise<unknown>;
}

/**
 * How the cache served one load: used (`hit`); none for these flags (`missing`); a file that is not
 * ours, is for another bundle or is damaged, never handed to V8 (`invalid`); refused by V8
 * (`rejected`); not asked for (`off`); source maps on, so required as a module (`source-maps`).
 * Every case but `hit` compiles the source.
 */
export type CacheUse = "hit" | "missing" | "invalid" | "rejected" | "off" | "source-maps";

/** Where the launcher leaves how the cache served this process, for its "started" log line (service-kit). */
export const CODE_CACHE_USE = Symbol.for("agentmesh.codeCache");

export interface LoadedBundle {
  readonly exports: BundleExports;
  readonly cache: CacheUse;
  readonly cacheFile: string;
  /** Writes the cache for this bundle and these flags (atomically); false when it could not. */
  writeCache(): boolean;
}

/**
 * The options this process runs with, from `NODE_OPTIONS` and then its command line (which wins),
 * as V8 sees them: one value per name (the last), in name order. V8 accepts a cache made under the
 * same version and flag values only; `v8.cachedDataVersionTag()` would say so too, but it also
 * folds in the CPU's features, which V8's check of a cache does not, and an image is built on
 * another machine than the one it runs on. Node's own options count too (a cache only misses).
 */
export function optionsKey(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? "",
): string {
  const options = new Map<string, string>();
  let last: string | null = null;
  for (const token of [...nodeOptions.split(/\s+/), ...execArgv].filter(Boolean)) {
    if (!token.startsWith("--")) {
      // the value of `--flag value`
      if (last !== null) options.set(last, token);
      last = null;
      continue;
    }
    const eq = token.indexOf("=");
    last = (eq < 0 ? token.slice(2) : token.slice(2, eq)).replaceAll("_", "-");
    options.set(last, eq < 0 ? "" : token.slice(eq + 1));
    if (eq >= 0) last = null;
  }
  return [...options]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => (v === "" ? `--${k}` : `--${k}=${v}`))
    .join(" ");
}

/** The cache file of `bundle` for this Node (and so V8) version and these options. */
export const cacheFileOf = (bundle: string): string =>
  `${bundle}.${sha256(`${process.version} ${optionsKey()}`).toString("hex").slice(0, 16)}.cache`;

/** V8's data from a cache file; `missing` when there is no file, `invalid` when it is not ours, for another bundle or damaged. */
export function readCacheData(file: string, sourceDigest: Buffer): Buffer | "missing" | "invalid" {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch {
    return "missing";
  }
  const head = MAGIC.length;
  if (raw.length <= head + 2 * DIGEST || !raw.subarray(0, head).equals(MAGIC)) return "invalid";
  if (!raw.subarray(head, head + DIGEST).equals(sourceDigest)) return "invalid";
  const data = raw.subarray(head + 2 * DIGEST);
  return raw.subarray(head + DIGEST, head + 2 * DIGEST).equals(sha256(data)) ? data : "invalid";
}

/**
 * Compiles and runs a process bundle (its modules' top level; not its main), with the cache when
 * `useCache` and one is there for it; as a plain CommonJS module when source maps are on.
 */
export function loadBundle(path: string, useCache = true): LoadedBundle {
  const bundle = resolve(path);
  const bytes = readFileSync(bundle);
  const source = bytes.toString("utf8");
  if (!source.startsWith(BUNDLE_MARK)) throw new Error(`${bundle} is not a process bundle (pnpm build writes them)`);
  const cacheFile = cacheFileOf(bundle);
  if (process.sourceMapsEnabled) {
    return {
      exports: createRequire(bundle)(bundle) as BundleExports,
      cache: "source-maps",
      cacheFile,
      writeCache: () => false,
    };
  }
  const digest = sha256(bytes);
  const read = useCache ? readCacheData(cacheFile, digest) : "off";
  const cachedData = typeof read === "string" ? undefined : read;
  const script = new Script(WRAPPER_HEAD + source + WRAPPER_TAIL, {
    filename: bundle,
    ...(cachedData ? { cachedData } : {}),
  });
  const cache: CacheUse = typeof read === "string" ? read : script.cachedDataRejected ? "rejected" : "hit";
  const module = { exports: {} as BundleExports };
  const run = script.runInThisContext() as (
    exports: unknown,
    require: NodeRequire,
    module: unknown,
    filename: string,
    dirname: string,
  ) => void;
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return {
    exports: module.exports,
    cache,
    cacheFile,
    writeCache() {
      const tmp = `${cacheFile}.${randomBytes(6).toString("hex")}.tmp`;
      try {
        // where it cannot be written (a read-only root file system), do not serialise a megabyte first
        accessSync(dirname(cacheFile), fsConstants.W_OK);
        // a process of an earlier build must not overwrite the cache of the bundle there now
        if (!sha256(readFileSync(bundle)).equals(digest)) return false;
        const data = script.createCachedData();
        writeFileSync(tmp, Buffer.concat([MAGIC, digest, sha256(data), data]));
        renameSync(tmp, cacheFile);
        return true;
      } catch {
        try {
          rmSync(tmp, { force: true });
        } catch {
          // nothing was written, or it cannot be removed: either way the cache stays as it was
        }
        return false;
      }
    },
  };
}

/**
 * The process bundle a service's `main.js` runs, or null for the ES module main: the service's own,
 * or for the agent the one of its role when it runs exactly one (`agent <role>` or `SERVICE`).
 */
export function bundleFor(
  service: string,
  distDir: string,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  if (service !== "agent") return existsSync(join(distDir, PROCESS_BUNDLE)) ? join(distDir, PROCESS_BUNDLE) : null;
  const roles = argv.length ? argv : [env.SERVICE ?? ""].filter(Boolean);
  const role = roles.length === 1 ? roles[0] : undefined;
  if (role === undefined || !/^[a-z][a-z0-9_-]*$/.test(role)) return null;
  // a role folder (its compiled role module beside the bundle), never another service's bundle
  const dist = join(distDir, "..", "..", role, "dist");
  return existsSync(join(dist, "role.js")) && existsSync(join(dist, PROCESS_BUNDLE))
    ? join(dist, PROCESS_BUNDLE)
    : null;
}

/**
 * What a service's compiled `main.js` calls. `AGENTMESH_CODE_CACHE`: `on` (default), `off` (compile
 * without the cache and write none) or `prime` (write the cache, then exit without starting: the build's step).
 */
export async function launch(mainUrl: string, service: string): Promise<void> {
  const distDir = dirname(fileURLToPath(mainUrl));
  const mode = process.env.AGENTMESH_CODE_CACHE ?? "on";
  if (mode !== "on" && mode !== "off" && mode !== "prime")
    throw new Error(`AGENTMESH_CODE_CACHE=${mode}: expected on, off or prime`);
  const bundle = bundleFor(service, distDir);
  if (bundle === null) {
    // priming must never start a service
    if (mode === "prime") throw new Error(`no process bundle for ${service} ${process.argv.slice(2).join(" ")}`.trim());
    await import(pathToFileURL(join(distDir, ESM_MAIN)).href);
    return;
  }
  let loaded: LoadedBundle;
  try {
    loaded = loadBundle(bundle, mode !== "off");
  } catch (err) {
    // as Node reports a module that throws at load, without the source line it would print with
    // the error: one of a bundle's lines can be 200 KB long
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  }
  (globalThis as Record<symbol, unknown>)[CODE_CACHE_USE] = loaded.cache;
  if (mode === "prime") {
    // what the service runs first besides its modules' top level (an agent's role module), compiled into the cache too
    await loaded.exports.warm?.();
    if (!loaded.writeCache()) throw new Error(`could not write ${loaded.cacheFile}`);
    // a module's top level may have left a handle open: priming never starts the service
    process.exit(0);
  }
  if (mode === "on" && loaded.cache !== "hit" && loaded.cache !== "source-maps")
    setTimeout(() => loaded.writeCache(), CACHE_WRITE_DELAY_MS).unref();
  const main = loaded.exports.main;
  if (typeof main !== "function") throw new Error(`${bundle} exports no main`);
  await main();
}
