/**
 * The memory settings every deployment gets (deploy/README.md, "Memory"): the V8 heap flags of
 * `deploy/node-options`, which the image's entrypoint and the e2e harness (hence the bench) both
 * apply, and nats-server's Go settings, the same in compose, the NATS chart values and the
 * servers the tests and the bench start.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { NATS_SERVER_ENV } from "../setup/infra.js";
import { SERVICE_NODE_OPTIONS } from "../e2e/harness.js";
import { at, map, parseYaml, read, ROOT } from "./test-support.js";

/** deploy/node-options without its comment lines, as one NODE_OPTIONS value. */
const fileOptions = read("deploy/node-options").split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#")).join(" ").trim();

describe("deploy/node-options", () => {
  const entry = read("deploy/docker/entrypoint.sh");
  // the entrypoint's own lines, run as it runs them; then node reports the heap limit they give
  const lines = entry.split("\n").filter((l) => /^(defaults=|export NODE_OPTIONS=)/.test(l));
  const heapLimitMiB = (own: string | undefined): number => {
    const script = `${lines.join("\n")}\nexec "${process.execPath}" -e 'console.log(require("v8").getHeapStatistics().heap_size_limit)'`;
    const r = spawnSync("sh", ["-eu", "-c", script], { cwd: ROOT, encoding: "utf8", env: { PATH: process.env.PATH, ...(own === undefined ? {} : { NODE_OPTIONS: own }) } });
    expect(r.status, r.stderr).toBe(0);
    return Number(r.stdout.trim()) / 2 ** 20;
  };

  it("sets a heap ceiling, which the image's entrypoint applies and a deployment's own NODE_OPTIONS overrides", () => {
    expect(lines).toHaveLength(2);
    const oldSpace = Number(/--max-old-space-size=(\d+)/.exec(fileOptions)?.[1]);
    expect(oldSpace).toBeGreaterThan(0);
    // the limit is the old space plus the young generation (a few MiB with --max-semi-space-size=1)
    expect(heapLimitMiB(undefined)).toBeGreaterThanOrEqual(oldSpace);
    expect(heapLimitMiB(undefined)).toBeLessThan(oldSpace + 16);
    expect(heapLimitMiB("--max-old-space-size=1024")).toBeGreaterThanOrEqual(1024);
  });

  it("is what the e2e harness and the bench start every service process with", () => {
    expect(SERVICE_NODE_OPTIONS).toBe(fileOptions);
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
