import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { ROLE_NAMES } from "@agentmesh/contracts";
import { buildAll } from "../../scripts/build.js";
import { sourceRoots } from "../../scripts/layout.js";
import { bundleProcess } from "../../scripts/build-process.js";
import { BUNDLE_MARK, PROCESS_BUNDLE } from "../../scripts/launcher.js";
import { uniquePrefix } from "../setup/prefix.js";
import {
  AGENT_ROLES,
  Cluster,
  SERVICE_NODE_OPTIONS,
  assertAppliedOnce,
  serviceArgv,
  serviceRuntime,
} from "./harness.js";

// `pnpm build`'s output is what production runs: every service main and role module is there, no
// compiled import still names a workspace package or a TypeScript file, and the compiled services
// start, answer a question end to end, and serve the CLI and the gateway.

const root = join(import.meta.dirname, "../..");
const cluster = new Cluster({
  natsUrl: inject("natsUrl"),
  redisUrl: inject("redisUrl"),
  prefix: uniquePrefix("build"),
  runtime: "compiled",
});

beforeAll(async () => {
  // the e2e global setup built already, unless AGENTMESH_SERVICE_RUNTIME=tsx skipped it
  if (serviceRuntime() !== "compiled") await buildAll();
  await cluster.open();
});
afterAll(() => cluster.close());

/** Every .js file under a folder. */
function jsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".js"))
    .map((f) => join(dir, f));
}

/**
 * What the tools' files found by path must do once compiled, with the package as `t`: the
 * calculator's worker (plain arithmetic, then mathjs for units, a bare import), the exact
 * evaluator, the QuickJS worker, the Python child and Pyodide. Prints one JSON line.
 */
const TOOLS_CHECK = `
  const { tool, pool } = t.createCalculatorTool({});
  const calc = await tool.execute({ expression: "2^70" }, { signal: AbortSignal.timeout(60000) });
  const units = await tool.execute({ expression: "5 cm to inch" }, { signal: AbortSignal.timeout(60000) });
  const exact = t.evaluateExact("1/3 + 1/6");
  await pool.close();
  const js = t.createJsRunner();
  const ran = await js.run("1 + 41");
  await js.close();
  const py = t.createPythonRunner();
  const status = await py.status();
  const printed = status.available ? (await py.run("print(6 * 7)")).stdout : null;
  await py.close();
  console.log(JSON.stringify({ calc: calc.result, units: units.result, exact, js: ran.result, python: status.detail, printed }));`;

/** Checks what TOOLS_CHECK printed. */
function expectToolsWork(stdout: string): void {
  const out = JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as {
    calc: string;
    units: string;
    exact: unknown;
    js: string;
    python: string;
    printed: string | null;
  };
  expect(out.calc).toBe("1180591620717411303424");
  expect(out.units).toMatch(/^1\.9685\d* inch$/);
  expect(JSON.stringify(out.exact)).toContain("0.5");
  expect(out.js).toBe("42");
  // without bubblewrap the runner says so; a Pyodide or child script not found would say that
  expect(out.python).not.toMatch(/no Pyodide|python-child|ENOENT/);
  if (out.printed !== null) expect(out.printed).toBe("42\n");
}

/** The ES module build's files: not the process bundles (a whole process each) nor the launcher mains. */
function moduleFiles(dir: string): string[] {
  return jsFiles(dir).filter(
    (f) =>
      !f.endsWith(PROCESS_BUNDLE) &&
      !(f.endsWith("/dist/main.js") && readFileSync(f, "utf8").includes("launch(import.meta.url")),
  );
}

describe("pnpm build", () => {
  test("the e2e processes run compiled, as the global setup arranged (AGENTMESH_SERVICE_RUNTIME=tsx runs them from source)", () => {
    expect(serviceRuntime()).toBe(process.env.AGENTMESH_SERVICE_RUNTIME === "tsx" ? "tsx" : "compiled");
    expect(serviceArgv("agent", ["planner"], "compiled")).toEqual([
      join(root, "services/agent/dist/main.js"),
      "planner",
    ]);
  });

  test("compiles every service's main and every role folder, and rewrites every workspace import to a compiled file", () => {
    for (const s of ["agent", "coordinator", "gateway", "cli", "local"])
      expect(existsSync(join(root, "services", s, "dist/main.js")), s).toBe(true);
    for (const role of ROLE_NAMES) expect(existsSync(join(root, "services", role, "dist/role.js")), role).toBe(true);
    // the workers and the files tools run by path sit beside the compiled modules that name them
    for (const f of [
      "builtins/calculator.worker.mjs",
      "builtins/corpus.worker.mjs",
      "builtins/exact.mjs",
      "runners/quickjs.worker.mjs",
      "runners/python-child.mjs",
    ]) {
      expect(existsSync(join(root, "packages/tools/dist", f)), f).toBe(true);
    }
    expect(existsSync(join(root, "services/analyst/dist/describe.py"))).toBe(true);
    const offenders: string[] = [];
    for (const r of sourceRoots()) {
      for (const file of moduleFiles(r.out)) {
        const text = readFileSync(file, "utf8");
        // an import or export naming a workspace package or a .ts file would fail at run time
        for (const m of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
          if (m[1]?.startsWith("@agentmesh/") || m[1]?.endsWith(".ts")) offenders.push(`${file}: ${m[1]}`);
        }
      }
    }
    expect(offenders).toEqual([]);
    // the npm packages every service loads at start, bundled once (scripts/build-vendor.ts)
    for (const v of ["zod", "nats-io__transport-node", "nats-io__jetstream", "ioredis", "pino", "prom-client"])
      expect(existsSync(join(root, "dist/vendor", `${v}.js`)), v).toBe(true);
    // zod's messages in English only: the other translations are never read or compiled
    const zod = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { z } = await import(${JSON.stringify(join(root, "dist/vendor/zod.js"))}); console.log(JSON.stringify({ locales: Object.keys(z.locales), message: z.string().safeParse(1).error?.issues[0]?.message }));`,
      ],
      { encoding: "utf8" },
    );
    expect(JSON.parse(zod.stdout)).toEqual({
      locales: ["en"],
      message: "Invalid input: expected string, received number",
    });
    expect(readFileSync(join(root, "dist/vendor/zod.js"), "utf8")).not.toContain("Tipus d");
  });

  test("the bundled tools find their workers, the QuickJS worker, the Python child and Pyodide from dist/", () => {
    // a process of its own, as an agent loads them: the compiled front door, no TypeScript loader
    const script = `const t = await import(${JSON.stringify(join(root, "packages/tools/dist/index.js"))});\n${TOOLS_CHECK}\nprocess.exit(0);`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: root,
      encoding: "utf8",
      timeout: 110_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expectToolsWork(r.stdout);
  });

  test("the coordinator, the gateway and every role have a process bundle with its code cache primed for the services' flags and a 1 GiB container's; a bundle requires npm packages only", () => {
    /** The cache file of each bundle for these NODE_OPTIONS, as the launcher names it in a process run with them. */
    const cacheFiles = (nodeOptions: string): Record<string, string> => {
      // a script file, not `-e`: an option on the command line (--input-type) would be part of the key
      const dir = mkdtempSync(join(tmpdir(), "cache-names-"));
      try {
        const script = join(dir, "names.mjs");
        writeFileSync(
          script,
          `const L = await import(${JSON.stringify(pathToFileURL(join(root, "dist/launcher.js")).href)}); console.log(JSON.stringify(Object.fromEntries(${JSON.stringify(["coordinator", "gateway", ...ROLE_NAMES])}.map((d) => [d, L.cacheFileOf(${JSON.stringify(join(root, "services"))} + "/" + d + "/dist/${PROCESS_BUNDLE}")]))));\n`,
        );
        const r = spawnSync(process.execPath, [script], {
          encoding: "utf8",
          env: { ...process.env, NODE_OPTIONS: nodeOptions },
        });
        expect(r.status, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as Record<string, string>;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    const services = cacheFiles(SERVICE_NODE_OPTIONS);
    // what the image's entrypoint gives a container with a 1 GiB limit (the prod overlay)
    const oneGiB = cacheFiles(`${SERVICE_NODE_OPTIONS} --max-old-space-size=512`);
    let externals = 0;
    for (const dir of ["coordinator", "gateway", ...ROLE_NAMES]) {
      const bundle = join(root, "services", dir, "dist", PROCESS_BUNDLE);
      const text = readFileSync(bundle, "utf8");
      expect(text.startsWith(BUNDLE_MARK), dir).toBe(true);
      expect(services[dir], dir).not.toBe(oneGiB[dir]);
      for (const cache of [services[dir], oneGiB[dir]])
        expect(existsSync(cache ?? ""), `${dir}: no ${cache}`).toBe(true);
      // nothing is required by path: a workspace module from outside the bundle would be a second
      // instance of it in the process; npm packages outside it load from their importer's package
      expect(text, dir).not.toMatch(/require\("\.{1,2}\//);
      expect(text, dir).not.toMatch(/require\("@agentmesh\//);
      const found = [...text.matchAll(/__agentmeshExternal\(\s*"([^"]+)",\s*"([^"]+)"\s*\)/g)];
      // every service loads the OpenTelemetry SDK (lazily, with tracing on) from outside its bundle
      expect(found.length, dir).toBeGreaterThanOrEqual(4);
      for (const m of found) {
        const from = createRequire(join(dirname(bundle), m[1] ?? "", "package.json"));
        expect(() => from(m[2] ?? ""), `${dir}: ${m[2]} from ${m[1]}`).not.toThrow();
        externals++;
      }
    }
    expect(externals).toBeGreaterThan(80);
    for (const s of ["agent", "coordinator", "gateway"]) {
      expect(readFileSync(join(root, "services", s, "dist/main.js"), "utf8"), s).toContain(
        `launch(import.meta.url, "${s}")`,
      );
      expect(existsSync(join(root, "services", s, "dist/main.esm.js")), s).toBe(true);
    }
    // prime mode writes the planner's cache and starts nothing (without a bundle it refuses)
    const cache = services.planner ?? "";
    const before = statSync(cache).mtimeMs;
    const primed = spawnSync(process.execPath, serviceArgv("agent", ["planner"], "compiled"), {
      cwd: root,
      encoding: "utf8",
      timeout: 15_000,
      env: { ...process.env, NODE_OPTIONS: SERVICE_NODE_OPTIONS, AGENTMESH_CODE_CACHE: "prime" },
    });
    expect(primed.status, primed.stderr).toBe(0);
    expect(statSync(cache).mtimeMs).toBeGreaterThan(before);
  });

  test("inside a process bundle too, the tools find their workers, mathjs, the QuickJS worker, the Python child and Pyodide", async () => {
    // the same checks as above, from a bundle built as the services' are: every `import.meta.url` rewritten
    const dir = mkdtempSync(join(tmpdir(), "bundle-tools-"));
    try {
      const bundle = join(root, "services/executor/dist", `test-tools-${process.pid}.cjs`);
      await bundleProcess(
        root,
        `import * as t from "@agentmesh/tools";\nexport async function main() {\n${TOOLS_CHECK}\n}`,
        bundle,
      );
      const launcher = join(root, "dist/launcher.js");
      const script = `const L = await import(${JSON.stringify(launcher)}); await L.loadBundle(${JSON.stringify(bundle)}, false).exports.main(); process.exit(0);`;
      const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        cwd: dir,
        encoding: "utf8",
        timeout: 110_000,
      });
      expect(r.status, r.stderr).toBe(0);
      expectToolsWork(r.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      for (const f of readdirSync(join(root, "services/executor/dist")).filter((n) =>
        n.startsWith(`test-tools-${process.pid}.`),
      ))
        rmSync(join(root, "services/executor/dist", f));
    }
  });

  test("a source file is bundled into one compiled file of its package (no module state twice in a process)", () => {
    const seen = new Map<string, string>();
    for (const r of sourceRoots()) {
      for (const file of moduleFiles(r.out)) {
        const map = JSON.parse(readFileSync(`${file}.map`, "utf8")) as { sources: string[] };
        for (const src of map.sources) {
          const abs = join(dirname(file), src);
          const prev = seen.get(abs);
          // a service's main and index.js share its modules: no process loads both
          const pair =
            prev !== undefined &&
            dirname(prev) === dirname(file) &&
            [prev, file].every((f) => /\/(main|main\.esm|index)\.js$/.test(f));
          if (prev !== undefined && !pair) expect.fail(`${abs} is in ${prev} and ${file}`);
          seen.set(abs, file);
        }
      }
    }
    expect(seen.size).toBeGreaterThan(100);
  });

  test("the compiled coordinator and agents answer a question end to end; the compiled CLI and gateway answer too", async () => {
    cluster.startAll(1);
    await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });
    // each started from its process bundle, compiled from the cache the build wrote
    await expect
      .poll(
        () =>
          cluster.procs
            .filter((p) => /"code_cache":"hit"[^\n]*"started"/.test(p.output()))
            .map((p) => p.name)
            .sort(),
        { timeout: 10_000 },
      )
      .toEqual(["coordinator", ...AGENT_ROLES].sort());
    const sid = await cluster.submit("What is 123456789 * 987654321?", "buildsmoke0000000001");
    const { state, log } = await cluster.waitDone(sid);
    expect(state.meta.status).toBe("completed");
    if (state.data.workflow !== "critic-chain")
      throw new Error(`expected a critic-chain session, got ${state.data.workflow}`);
    expect(state.data.final_answer).toContain("121932631112635269");
    assertAppliedOnce(log, state.meta.version);

    const cli = spawnSync(process.execPath, serviceArgv("cli", ["--help"], "compiled"), {
      cwd: root,
      encoding: "utf8",
    });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain("agentmesh");

    const { url } = await cluster.startGateway({ AGENTMESH_GATEWAY_ANONYMOUS: "1" });
    await expect
      .poll(
        () => cluster.procs.some((p) => p.name === "gateway" && /"code_cache":"hit"[^\n]*"started"/.test(p.output())),
        { timeout: 10_000 },
      )
      .toBe(true);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<html");
  });
});
