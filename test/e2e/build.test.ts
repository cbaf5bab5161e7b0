import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { ROLE_NAMES } from "@agentmesh/contracts";
import { buildAll, sourceRoots } from "../../scripts/build.js";
import { uniquePrefix } from "../setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce, serviceArgv, serviceRuntime } from "./harness.js";

// `pnpm build`'s output is what production runs: every service main and role module is there, no
// compiled import still names a workspace package or a TypeScript file, and the compiled services
// start, answer a question end to end, and serve the CLI and the gateway.

const root = join(import.meta.dirname, "../..");
const cluster = new Cluster({ natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl"), prefix: uniquePrefix("build"), runtime: "compiled" });

beforeAll(async () => {
  // the e2e global setup built already, unless AGENTMESH_SERVICE_RUNTIME=tsx skipped it
  if (serviceRuntime() !== "compiled") await buildAll();
  await cluster.open();
});
afterAll(() => cluster.close());

/** Every .js file under a folder. */
function jsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js")).map((f) => join(dir, f));
}

describe("pnpm build", () => {
  test("the e2e processes run compiled, as the global setup arranged (AGENTMESH_SERVICE_RUNTIME=tsx runs them from source)", () => {
    expect(serviceRuntime()).toBe(process.env.AGENTMESH_SERVICE_RUNTIME === "tsx" ? "tsx" : "compiled");
    expect(serviceArgv("agent", ["planner"], "compiled")).toEqual([join(root, "services/agent/dist/main.js"), "planner"]);
  });

  test("compiles every service's main and every role folder, and rewrites every workspace import to a compiled file", () => {
    for (const s of ["agent", "coordinator", "gateway", "cli", "local"]) expect(existsSync(join(root, "services", s, "dist/main.js")), s).toBe(true);
    for (const role of ROLE_NAMES) expect(existsSync(join(root, "services", role, "dist/role.js")), role).toBe(true);
    // the workers and the files tools run by path sit beside the compiled modules that name them
    for (const f of ["builtins/calculator.worker.mjs", "builtins/corpus.worker.mjs", "builtins/exact.mjs", "runners/quickjs.worker.mjs", "runners/python-child.mjs"]) {
      expect(existsSync(join(root, "packages/tools/dist", f)), f).toBe(true);
    }
    expect(existsSync(join(root, "services/analyst/dist/describe.py"))).toBe(true);
    const offenders: string[] = [];
    for (const r of sourceRoots()) {
      for (const file of jsFiles(r.out)) {
        const text = readFileSync(file, "utf8");
        // an import or export naming a workspace package or a .ts file would fail at run time
        for (const m of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
          if (m[1]?.startsWith("@agentmesh/") || m[1]?.endsWith(".ts")) offenders.push(`${file}: ${m[1]}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  test("the compiled coordinator and agents answer a question end to end; the compiled CLI and gateway answer too", async () => {
    cluster.startAll(1);
    await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });
    const sid = await cluster.submit("What is 123456789 * 987654321?", "buildsmoke0000000001");
    const { state, log } = await cluster.waitDone(sid);
    expect(state.meta.status).toBe("completed");
    if (state.data.workflow !== "critic-chain") throw new Error(`expected a critic-chain session, got ${state.data.workflow}`);
    expect(state.data.final_answer).toContain("121932631112635269");
    assertAppliedOnce(log, state.meta.version);

    const cli = spawnSync(process.execPath, serviceArgv("cli", ["--help"], "compiled"), { cwd: root, encoding: "utf8" });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain("agentmesh");

    const { url } = await cluster.startGateway({ AGENTMESH_GATEWAY_ANONYMOUS: "1" });
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<html");
  });
});
