import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { build as esbuild, type Plugin } from "esbuild";

// The npm half of `pnpm build` (see scripts/build.ts): the packages every service loads at start
// are bundled once into `dist/vendor/`, one file per import specifier our code uses (`zod`,
// `hono/streaming`, …) plus the chunks they share, so a process loads a handful of files instead
// of the ~400 modules these packages spread over, and every compiled module of a process imports
// the same instance (one zod, one nats-core under transport-node and jetstream).

/**
 * npm packages bundled into `dist/vendor/`: the ones a service imports at start, none of which
 * finds files by path. The rest (mathjs, openai, the MCP SDK, ajv, the OpenTelemetry SDK, pyodide,
 * quickjs, …) are loaded on first use, or by a worker, and resolve from their package's own
 * node_modules at run time, as they do under tsx.
 */
export const VENDORED = [
  "zod",
  "@nats-io/transport-node",
  "@nats-io/jetstream",
  "ioredis",
  "pino",
  "prom-client",
  "@opentelemetry/api",
  "hono",
  "@hono/node-server",
  "commander",
] as const;

/** Whether an import specifier (`hono/streaming`) names a vendored package. */
export const isVendored = (spec: string): boolean => VENDORED.some((p) => spec === p || spec.startsWith(`${p}/`));

/** The file in `dist/vendor/` that stands for an import specifier: `hono/streaming` → `hono__streaming.js`. */
export const vendorFile = (root: string, spec: string): string =>
  join(root, "dist", "vendor", `${spec.replace(/^@/, "").replace(/\//g, "__")}.js`);

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * zod's messages in English only. Its `locales` namespace re-exports every translation (about 360 KB
 * of the 760 KB zod bundles into), which every process would read, compile and evaluate at start;
 * our messages are English (formatZodError) and nothing selects another locale, so `z.locales`
 * keeps `en`, the one zod registers by default.
 */
export const zodEnglishOnly: Plugin = {
  name: "agentmesh-zod-english",
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) => {
      if (!/[\\/]zod[\\/]v4[\\/]/.test(args.importer)) return undefined;
      return { path: join(args.resolveDir, args.path), namespace: "zod-english" };
    });
    b.onLoad({ filter: /.*/, namespace: "zod-english" }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: dirname(args.path),
      loader: "js",
    }));
  },
};

/** What every bundle of the build is: ES modules for Node 24, linked source maps without the sources. */
export const NODE_BUNDLE = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: "linked",
  sourcesContent: false,
  logLevel: "silent",
} as const;

/**
 * Bundles the vendored specifiers our compiled modules import (each with the folder of a module
 * that imports it, where it resolves as it would at run time) into `dist/vendor/`, ES modules
 * sharing chunks. CommonJS inside gets a `require` for Node's built-ins.
 */
export async function buildVendor(root: string, used: ReadonlyMap<string, string>): Promise<number> {
  const stubPlugin: Plugin = {
    name: "agentmesh-vendor",
    setup(b) {
      // `.mjs`: esbuild then gives a CommonJS module's `module.exports` as the default, as Node does
      b.onResolve({ filter: /^vendor:/ }, (args) => ({
        path: `${args.path.slice("vendor:".length)}.mjs`,
        namespace: "vendor",
      }));
      b.onLoad({ filter: /.*/, namespace: "vendor" }, async (args) => {
        const spec = args.path.replace(/\.mjs$/, "");
        const resolveDir = used.get(spec);
        if (resolveDir === undefined) return { errors: [{ text: `no vendored import ${spec}` }] };
        // the file esbuild bundles for it; importing that file here names its exports as Node
        // gives them (for a CommonJS module, what Node's ES module interop finds in it): a bundle
        // of a CommonJS module has only a default export, so the stub re-exports each name
        const file = await b.resolve(spec, { resolveDir, kind: "import-statement" });
        if (file.errors.length) return { errors: file.errors };
        const ns = (await import(pathToFileURL(file.path).href)) as Record<string, unknown>;
        const names = Object.keys(ns).filter((k) => k === "default" || IDENTIFIER.test(k));
        return { contents: `export { ${names.join(", ")} } from ${JSON.stringify(spec)};\n`, resolveDir, loader: "js" };
      });
    },
  };
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints: [...used.keys()]
      .sort()
      .map((spec) => ({ in: `vendor:${spec}`, out: vendorFile(root, spec).replace(/\.js$/, "") })),
    outdir: join(root, "dist", "vendor"),
    chunkNames: "chunk-[hash]",
    ...NODE_BUNDLE,
    splitting: true,
    // CommonJS bundled into an ES module calls require() for Node's built-ins
    banner: {
      js: 'import { createRequire as __agentmeshRequire } from "node:module";\nconst require = __agentmeshRequire(import.meta.url);',
    },
    plugins: [stubPlugin, zodEnglishOnly],
  });
  if (result.warnings.length) throw new Error(`build (vendor): ${result.warnings.map((w) => w.text).join("; ")}`);
  return used.size;
}
