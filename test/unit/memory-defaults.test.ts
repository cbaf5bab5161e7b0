/**
 * The memory settings every deployment gets (deploy/README.md, "Memory"): the V8 heap flags of
 * `deploy/node-options`, which the image's entrypoint and the e2e harness (hence the bench) both
 * apply, and nats-server's Go settings, the same in compose, the NATS chart values and the
 * servers the tests and the bench start.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NATS_SERVER_ENV } from "../setup/infra.js";
import { Cluster } from "../e2e/harness.js";
import { at, map, parseYaml, read, ROOT } from "./test-support.js";

/** deploy/node-options without its comment lines, as one NODE_OPTIONS value. */
const fileOptions = read("deploy/node-options")
  .split("\n")
  .filter((l) => l.trim() !== "" && !l.startsWith("#"))
  .join(" ")
  .trim();

describe("deploy/node-options", () => {
  const entry = read("deploy/docker/entrypoint.sh");
  // the entrypoint's own lines, run as it runs them; then node reports the heap limit they give
  const all = entry.split("\n");
  const lines = all.slice(
    all.findIndex((l) => l.startsWith("defaults=")),
    all.findIndex((l) => l.startsWith("export NODE_OPTIONS=")) + 1,
  );
  const heapLimitMiB = (own: string | undefined): number => {
    const script = `export AGENTMESH_CGROUP_DIR=/nonexistent\n${lines.join("\n")}\nexec "${process.execPath}" -e 'console.log(require("v8").getHeapStatistics().heap_size_limit)'`;
    const r = spawnSync("sh", ["-eu", "-c", script], {
      cwd: ROOT,
      encoding: "utf8",
      env: { PATH: process.env.PATH, ...(own === undefined ? {} : { NODE_OPTIONS: own }) },
    });
    expect(r.status, r.stderr).toBe(0);
    return Number(r.stdout.trim()) / 2 ** 20;
  };

  it("sets a heap ceiling, which the image's entrypoint applies and a deployment's own NODE_OPTIONS overrides", () => {
    expect(lines[0]).toMatch(/^defaults=/);
    expect(lines.at(-1)).toMatch(/^export NODE_OPTIONS=/);
    const oldSpace = Number(/--max-old-space-size=(\d+)/.exec(fileOptions)?.[1]);
    expect(oldSpace).toBeGreaterThan(0);
    // the limit is the old space plus the young generation (a few MiB with --max-semi-space-size=1)
    expect(heapLimitMiB(undefined)).toBeGreaterThanOrEqual(oldSpace);
    expect(heapLimitMiB(undefined)).toBeLessThan(oldSpace + 16);
    expect(heapLimitMiB("--max-old-space-size=1024")).toBeGreaterThanOrEqual(1024);
  });

  it("raises the ceiling to half of a container memory limit above the manifests' 512 MiB, never lowers it", () => {
    const dir = mkdtempSync(join(tmpdir(), "cgroup-"));
    try {
      /** node's heap limit (MiB) under the entrypoint with this cgroup memory limit (v2 `memory.max`, or v1). */
      const limitWith = (files: Record<string, string>, own?: string): number => {
        rmSync(join(dir, "memory.max"), { force: true });
        rmSync(join(dir, "memory"), { recursive: true, force: true });
        for (const [f, v] of Object.entries(files)) {
          mkdirSync(join(dir, f, ".."), { recursive: true });
          writeFileSync(join(dir, f), `${v}\n`);
        }
        const script = `export AGENTMESH_CGROUP_DIR=${dir}\n${lines.join("\n")}\nexec "${process.execPath}" -e 'console.log(require("v8").getHeapStatistics().heap_size_limit)'`;
        const r = spawnSync("sh", ["-eu", "-c", script], {
          cwd: ROOT,
          encoding: "utf8",
          env: { PATH: process.env.PATH, ...(own === undefined ? {} : { NODE_OPTIONS: own }) },
        });
        expect(r.status, r.stderr).toBe(0);
        return Math.floor(Number(r.stdout.trim()) / 2 ** 20);
      };
      const oldSpace = Number(/--max-old-space-size=(\d+)/.exec(fileOptions)?.[1]);
      const near = (mib: number, want: number) =>
        expect(mib >= want && mib < want + 16, `${mib} MiB, want ${want}`).toBe(true);
      near(limitWith({}), oldSpace);
      near(limitWith({ "memory.max": "max" }), oldSpace);
      near(limitWith({ "memory.max": String(512 * 2 ** 20) }), oldSpace);
      near(limitWith({ "memory.max": String(2 * 2 ** 30) }), 1024);
      near(limitWith({ "memory/memory.limit_in_bytes": String(4 * 2 ** 30) }), 2048);
      near(limitWith({ "memory/memory.limit_in_bytes": "9223372036854771712" }), oldSpace);
      // a deployment's own flag still wins
      near(limitWith({ "memory.max": String(2 * 2 ** 30) }, "--max-old-space-size=300"), 300);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is what the e2e harness and the bench start every service process with, as the entrypoint builds it", () => {
    /** NODE_OPTIONS as the entrypoint's own lines leave it, given a deployment's own value. */
    const fromEntrypoint = (own: string | undefined): string => {
      const r = spawnSync(
        "sh",
        ["-eu", "-c", `export AGENTMESH_CGROUP_DIR=/nonexistent\n${lines.join("\n")}\nprintf '%s' "$NODE_OPTIONS"`],
        {
          cwd: ROOT,
          encoding: "utf8",
          env: { PATH: process.env.PATH, ...(own === undefined ? {} : { NODE_OPTIONS: own }) },
        },
      );
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    const cluster = new Cluster({
      natsUrl: "nats://127.0.0.1:1",
      redisUrl: "redis://127.0.0.1:1",
      prefix: "memdefaults",
      accessControl: false,
    });
    expect(fromEntrypoint(undefined)).toContain("--max-old-space-size=");
    expect(cluster.env({}, "planner").NODE_OPTIONS).toBe(fromEntrypoint(undefined));
    expect(cluster.env({ NODE_OPTIONS: "--max-old-space-size=1024" }, "planner").NODE_OPTIONS).toBe(
      fromEntrypoint("--max-old-space-size=1024"),
    );
  });
});

describe("nats-server's environment", () => {
  it("is the same in docker-compose.yml as where the tests and the bench start it", () => {
    const services = map(map(parseYaml(read("docker-compose.yml")), "docker-compose.yml").services, "services");
    const env = map(map(services.nats, "nats").environment, "nats environment");
    for (const [k, v] of Object.entries(NATS_SERVER_ENV)) expect(env[k], k).toBe(v);
  });

  it("is the same in the NATS chart values", () => {
    const values = parseYaml(read("deploy/infra/nats-values.yaml"));
    for (const [k, v] of Object.entries(NATS_SERVER_ENV)) expect(at(values, "container", "env", k), k).toBe(v);
  });
});
