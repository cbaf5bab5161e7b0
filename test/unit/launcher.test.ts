// The process launcher (scripts/launcher.ts): a process bundle compiled through V8's code cache.
// Every load runs in a child process, as a service starts: a fresh V8 with its own flags, so a
// cache is really deserialized (or refused), and a cache that crashed V8 would fail the test
// instead of the test runner.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  BUNDLE_MARK,
  CACHE_WRITE_DELAY_MS,
  ESM_MAIN,
  PROCESS_BUNDLE,
  bundleFor,
  optionsKey,
} from "../../scripts/launcher.js";

// compiled as the build compiles it (dist/launcher.js): the children run it without a TypeScript
// loader, which would turn source maps on (tsx does) and so change what the launcher does
const compiled = mkdtempSync(join(tmpdir(), "launcher-js-"));
const LAUNCHER = join(compiled, "launcher.mjs");
beforeAll(async () => {
  await build({
    entryPoints: [join(import.meta.dirname, "../../scripts/launcher.ts")],
    outfile: LAUNCHER,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    logLevel: "silent",
  });
});
afterAll(() => rmSync(compiled, { recursive: true, force: true }));

/**
 * A process bundle whose `value` is `value`, whose main writes `value` to the file `$MAIN_RAN` and
 * whose `warm` (what priming runs) writes "warm" to `$WARMED`.
 */
const bundleSource = (value: string) =>
  `${BUNDLE_MARK}
"use strict";
const words = [];
for (let i = 0; i < 200; i++) words.push(((n) => "w" + n.toString(36))(i));
exports.value = ${JSON.stringify(value)};
exports.words = words.length;
exports.strict = (function () { return this === undefined; })();
exports.main = async () => { require("node:fs").writeFileSync(process.env.MAIN_RAN, exports.value); };
exports.warm = async () => { if (process.env.WARMED) require("node:fs").writeFileSync(process.env.WARMED, "warm"); };
`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "launcher-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface ChildResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `code` (an ES module body with `L`, the launcher, imported) in a child node with `flags`. */
function child(code: string, opts: { flags?: readonly string[]; env?: Record<string, string> } = {}): ChildResult {
  const script = `const L = await import(${JSON.stringify(pathToFileURL(LAUNCHER).href)});\n${code}`;
  const r = spawnSync(process.execPath, [...(opts.flags ?? []), "--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "", ...opts.env },
    timeout: 60_000,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Loads `bundle` in a child and reports how the cache served it and what the bundle exported. */
function load(
  bundle: string,
  opts: { flags?: readonly string[]; write?: boolean } = {},
): { cache: string; value: string; words: number; strict: boolean; cacheFile: string } {
  const r = child(
    `const b = L.loadBundle(${JSON.stringify(bundle)});
     ${opts.write ? "if (!b.writeCache()) throw new Error('no cache written');" : ""}
     console.log(JSON.stringify({ cache: b.cache, value: b.exports.value, words: b.exports.words, strict: b.exports.strict, cacheFile: b.cacheFile }));`,
    opts,
  );
  expect(r.signal, r.stderr).toBeNull();
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as {
    cache: string;
    value: string;
    words: number;
    strict: boolean;
    cacheFile: string;
  };
}

describe("a process bundle through the code cache", () => {
  it("compiles without a cache, writes one, and the next process loads from it", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    const first = load(bundle, { write: true });
    expect(first).toMatchObject({ cache: "missing", value: "A", words: 200, strict: true });
    expect(existsSync(first.cacheFile)).toBe(true);
    expect(load(bundle)).toMatchObject({ cache: "hit", value: "A", words: 200, strict: true });
  });

  it("with source maps on, requires the bundle as the CommonJS module it is, and neither reads nor writes a cache", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    const mapped = load(bundle, { flags: ["--enable-source-maps"] });
    expect(mapped).toMatchObject({ cache: "source-maps", value: "A", strict: true });
    const r = child(`const b = L.loadBundle(${JSON.stringify(bundle)}); console.log(b.writeCache());`, {
      flags: ["--enable-source-maps"],
    });
    expect(r.stdout.trim()).toBe("false");
    expect(existsSync(mapped.cacheFile)).toBe(false);
  });

  it("a process of an earlier build does not write its cache over the bundle there now", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    const r = child(
      `const b = L.loadBundle(${JSON.stringify(bundle)});
       (await import("node:fs")).writeFileSync(${JSON.stringify(bundle)}, ${JSON.stringify(bundleSource("B"))});
       console.log(JSON.stringify({ wrote: b.writeCache(), exists: (await import("node:fs")).existsSync(b.cacheFile) }));`,
    );
    expect(JSON.parse(r.stdout.trim())).toEqual({ wrote: false, exists: false });
    expect(load(bundle)).toMatchObject({ cache: "missing", value: "B" });
  });

  it("never hands V8 a damaged, truncated or foreign cache file (V8 itself checks only the length, and damaged data can crash it)", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    const { cacheFile } = load(bundle, { write: true });
    const good = readFileSync(cacheFile);
    const damaged = Buffer.from(good);
    for (let i = 0; i < 64; i++) {
      const at = Math.floor(damaged.length / 2) + i * 7;
      damaged.writeUInt8(damaged.readUInt8(at) ^ 0x5a, at);
    }
    for (const bad of [
      damaged,
      good.subarray(0, Math.floor(good.length / 2)),
      Buffer.from("not a cache at all"),
      Buffer.alloc(0),
    ]) {
      writeFileSync(cacheFile, bad);
      expect(load(bundle)).toMatchObject({ cache: "invalid", value: "A", words: 200 });
    }
  });

  it("ignores the cache of an earlier bundle of the same length: the new source runs", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    load(bundle, { write: true });
    writeFileSync(bundle, bundleSource("B"));
    expect(bundleSource("B").length).toBe(bundleSource("A").length);
    expect(load(bundle)).toMatchObject({ cache: "invalid", value: "B" });
  });

  it("keeps one cache file per V8 flag set: another set neither uses nor replaces it", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    const plain = load(bundle, { write: true });
    const before = readFileSync(plain.cacheFile);
    const other = load(bundle, { flags: ["--max-old-space-size=300"] });
    expect(other.cache).toBe("missing");
    expect(other.cacheFile).not.toBe(plain.cacheFile);
    expect(readFileSync(plain.cacheFile).equals(before)).toBe(true);
    expect(load(bundle).cache).toBe("hit");
  });

  it("a cache V8 refuses (made under other flags) is reported as rejected and the source runs", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(bundle, bundleSource("A"));
    // a flag in V8's code-cache check (under Node 24 the heap sizes are not: V8 takes such a cache)
    const other = load(bundle, { flags: ["--stack-size=900"], write: true });
    const plain = load(bundle);
    expect(plain.cacheFile).not.toBe(other.cacheFile);
    // ours by every check of the launcher (the same bundle, undamaged), but not V8's to use here
    writeFileSync(plain.cacheFile, readFileSync(other.cacheFile));
    expect(load(bundle)).toMatchObject({ cache: "rejected", value: "A", words: 200 });
  });

  it("keys the cache by the options' values, wherever they are given: NODE_OPTIONS, then the command line, the last of a name winning", () => {
    const base = optionsKey([], "--max-semi-space-size=1 --max-old-space-size=256");
    expect(optionsKey(["--max-old-space-size=256", "--max-semi-space-size=1"], "")).toBe(base);
    expect(optionsKey([], "--max-old-space-size=256   --max-semi-space-size=1 --max-old-space-size=256")).toBe(base);
    // the entrypoint appends a raised ceiling for a larger container: the same as giving it alone
    expect(optionsKey([], "--max-semi-space-size=1 --max-old-space-size=256 --max-old-space-size=512")).toBe(
      optionsKey(["--max-old-space-size=512"], "--max-semi-space-size=1"),
    );
    expect(optionsKey([], "--max-semi-space-size=1 --max-old-space-size=512")).not.toBe(base);
    expect(optionsKey(["--stack-size", "900"], "")).toBe(optionsKey(["--stack_size=900"], ""));
    expect(optionsKey([], "")).toBe("");
  });

  it("a bundle that throws while loading stops the process with its error, exit 1, and none of its source", () => {
    const bundle = join(dir, PROCESS_BUNDLE);
    writeFileSync(
      bundle,
      `${BUNDLE_MARK}\n"use strict";\nconst pad = "${"x".repeat(50_000)}";\nthrow new Error("module broke at load " + pad.length);\n`,
    );
    const r = child(`await L.launch(${JSON.stringify(pathToFileURL(join(dir, "main.js")).href)}, "coordinator");`, {
      env: { MAIN_RAN: join(dir, "ran") },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("module broke at load 50000");
    expect(r.stderr.length).toBeLessThan(5_000);
  });

  it(`a service started without a cache writes one ${CACHE_WRITE_DELAY_MS / 1000} s after it started, which its next start uses`, () => {
    const dist = join(dir, "services", "coordinator", "dist");
    mkdirSync(dist, { recursive: true });
    writeFileSync(
      join(dist, PROCESS_BUNDLE),
      `${BUNDLE_MARK}\n"use strict";\nexports.main = () => new Promise((r) => setTimeout(r, ${CACHE_WRITE_DELAY_MS + 1500}));\n`,
    );
    const main = pathToFileURL(join(dist, "main.js")).href;
    const run = child(
      `await L.launch(${JSON.stringify(main)}, "coordinator"); console.log(globalThis[Symbol.for("agentmesh.codeCache")]);`,
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe("missing");
    const again = child(
      `await L.launch(${JSON.stringify(main)}, "coordinator"); console.log(globalThis[Symbol.for("agentmesh.codeCache")]);`,
    );
    expect(again.stdout.trim()).toBe("hit");
  }, 30_000);

  it("refuses a file that is not a process bundle", () => {
    const file = join(dir, "other.cjs");
    writeFileSync(file, "module.exports = 1;\n");
    const r = child(`L.loadBundle(${JSON.stringify(file)});`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("is not a process bundle");
  });
});

describe("launch: what a bundled service's main.js does", () => {
  /** services/<service>/dist/ with a bundle (unless `bundle` is null) and an ES module main that records it ran. */
  function service(name: string, bundle: string | null): string {
    const dist = join(dir, "services", name, "dist");
    mkdirSync(dist, { recursive: true });
    if (bundle !== null) writeFileSync(join(dist, PROCESS_BUNDLE), bundle);
    writeFileSync(
      join(dist, ESM_MAIN),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(process.env.MAIN_RAN, "esm");\n`,
    );
    return join(dist, "main.js");
  }
  const launch = (main: string, name: string, env: Record<string, string>, argv: readonly string[] = []) =>
    child(
      `process.argv = [process.execPath, "main.js", ...${JSON.stringify(argv)}]; await L.launch(${JSON.stringify(pathToFileURL(main).href)}, ${JSON.stringify(name)});`,
      {
        env: { MAIN_RAN: join(dir, "ran"), ...env },
      },
    );

  it("runs the bundle's main; `prime` writes the cache and starts nothing; `off` compiles without it and writes none", () => {
    const main = service("coordinator", bundleSource("A"));
    const ran = join(dir, "ran");
    const cacheOf = () =>
      child(
        `console.log(L.cacheFileOf(${JSON.stringify(join(dir, "services/coordinator/dist", PROCESS_BUNDLE))}));`,
      ).stdout.trim();
    const cacheFile = cacheOf();

    const warmed = join(dir, "warmed");
    const primed = launch(main, "coordinator", { AGENTMESH_CODE_CACHE: "prime", WARMED: warmed });
    expect(primed.status, primed.stderr).toBe(0);
    expect(existsSync(ran)).toBe(false);
    expect(readFileSync(warmed, "utf8")).toBe("warm");
    expect(existsSync(cacheFile)).toBe(true);

    rmSync(cacheFile);
    const off = launch(main, "coordinator", { AGENTMESH_CODE_CACHE: "off" });
    expect(off.status, off.stderr).toBe(0);
    expect(readFileSync(ran, "utf8")).toBe("A");
    expect(existsSync(cacheFile)).toBe(false);

    const bad = launch(main, "coordinator", { AGENTMESH_CODE_CACHE: "sometimes" });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("AGENTMESH_CODE_CACHE=sometimes: expected on, off or prime");
  });

  it("runs an agent's role bundle for one role, and the ES module main for several roles or a role without a bundle", () => {
    const main = service("agent", null);
    const planner = join(dir, "services", "planner", "dist");
    mkdirSync(planner, { recursive: true });
    writeFileSync(join(planner, PROCESS_BUNDLE), bundleSource("planner"));
    writeFileSync(join(planner, "role.js"), "export default {};\n");
    const ran = join(dir, "ran");

    expect(launch(main, "agent", {}, ["planner"]).status).toBe(0);
    expect(readFileSync(ran, "utf8")).toBe("planner");
    expect(launch(main, "agent", { SERVICE: "planner" }).status).toBe(0);
    expect(readFileSync(ran, "utf8")).toBe("planner");
    for (const argv of [["planner", "critic"], ["critic"]]) {
      rmSync(ran);
      const r = launch(main, "agent", {}, argv);
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(ran, "utf8")).toBe("esm");
    }
  });

  it("a service whose bundle is missing runs its ES module main", () => {
    const main = service("coordinator", null);
    expect(launch(main, "coordinator", {}).status).toBe(0);
    expect(readFileSync(join(dir, "ran"), "utf8")).toBe("esm");
  });

  it("the agent's main never runs another service's bundle, and priming without a bundle starts nothing", () => {
    const main = service("agent", null);
    service("coordinator", bundleSource("coordinator"));
    const ran = join(dir, "ran");
    // not a role folder: the ES module main gets the name (and refuses it, as before bundles)
    expect(launch(main, "agent", {}, ["coordinator"]).status).toBe(0);
    expect(readFileSync(ran, "utf8")).toBe("esm");
    rmSync(ran);
    const primed = launch(main, "agent", { AGENTMESH_CODE_CACHE: "prime" }, ["planner", "critic"]);
    expect(primed.status).not.toBe(0);
    expect(primed.stderr).toContain("no process bundle for agent planner critic");
    expect(existsSync(ran)).toBe(false);
  });
});

describe("bundleFor", () => {
  it("picks the service's own bundle, or an agent's role bundle only for exactly one plain role name", () => {
    const agentDist = join(dir, "services", "agent", "dist");
    mkdirSync(join(dir, "services", "planner", "dist"), { recursive: true });
    writeFileSync(join(dir, "services", "planner", "dist", PROCESS_BUNDLE), bundleSource("p"));
    writeFileSync(join(dir, "services", "planner", "dist", "role.js"), "export default {};\n");
    for (const s of ["gateway", "coordinator"]) {
      mkdirSync(join(dir, "services", s, "dist"), { recursive: true });
      writeFileSync(join(dir, "services", s, "dist", PROCESS_BUNDLE), bundleSource(s));
    }
    expect(bundleFor("cli", join(dir, "services", "cli", "dist"), [], {})).toBeNull();
    expect(bundleFor("coordinator", join(dir, "services", "coordinator", "dist"), [], {})).toBe(
      join(dir, "services", "coordinator", "dist", PROCESS_BUNDLE),
    );
    expect(bundleFor("agent", agentDist, ["planner"], {})).toBe(
      join(dir, "services", "planner", "dist", PROCESS_BUNDLE),
    );
    expect(bundleFor("agent", agentDist, [], { SERVICE: "planner" })).toBe(
      join(dir, "services", "planner", "dist", PROCESS_BUNDLE),
    );
    expect(bundleFor("agent", agentDist, ["planner", "critic"], {})).toBeNull();
    expect(bundleFor("agent", agentDist, ["critic"], {})).toBeNull();
    expect(bundleFor("agent", agentDist, [], {})).toBeNull();
    expect(bundleFor("agent", agentDist, ["../planner"], {})).toBeNull();
    expect(bundleFor("agent", agentDist, ["gateway"], {})).toBeNull();
  });
});
