/**
 * The NATS server of docker-compose.yml and of deploy/infra/nats-values.yaml, run (`nats-server -t`)
 * with what `pnpm nats:keys` generates: the compose command line with the generated config, and
 * the Helm chart's config with the accounts it includes from the generated ConfigMap. A flag that
 * clashes with the config, or an include path that misses the mounted ConfigMap, fails here.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROLE_NAMES } from "@agentmesh/contracts";
import { natsAccountName, SERVICE_USERS } from "@agentmesh/messaging";
import { PREFIX } from "../../scripts/render-deploy.js";
import { natsServerBinary } from "../setup/nats-auth.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const read = (path: string): string => readFileSync(join(ROOT, path), "utf8");

type Yaml = { [key: string]: Yaml } | Yaml[] | string | number | boolean | null | undefined;
function at(v: Yaml, ...path: (string | number)[]): Yaml {
  let cur = v;
  for (const step of path)
    cur = cur !== null && typeof cur === "object" ? (cur as Record<string | number, Yaml>)[step] : undefined;
  return cur;
}

let dir: string;
let bin: string;

/** `nats-server <args> -t`: the exit status and what it printed. */
function check(args: readonly string[]): { status: number | null; output: string } {
  const r = spawnSync(bin, [...args, "-t"], { encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

beforeAll(() => {
  const found = natsServerBinary();
  if (!found)
    throw new Error("this test needs the nats-server binary (apt-get install nats-server, or set NATS_SERVER_BIN)");
  bin = found;
  dir = mkdtempSync(join(tmpdir(), "agentmesh-natskeys-"));
  const r = spawnSync(
    process.execPath,
    ["--import", "tsx", "scripts/nats-keys.ts", "--prefix", PREFIX, "--out", join(dir, "out")],
    { cwd: ROOT, encoding: "utf8" },
  );
  expect(r.status, r.stderr).toBe(0);
}, 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("nats-server with the config `pnpm nats:keys` generates", () => {
  it("docker-compose.yml: the nats service's command line accepts the generated config", () => {
    const nats = at(parse(read("docker-compose.yml")) as Yaml, "services", "nats");
    const command = (at(nats, "command") as string[]).map(String);
    const conf = command[command.indexOf("-c") + 1];
    expect(command.indexOf("-c")).toBeGreaterThan(0);
    const args = command.slice(1).map((a) => (a === conf ? join(dir, "out", "nats-server.conf") : a));
    const result = check(args);
    expect(result.output).toContain("is valid");
    expect(result.status).toBe(0);
  });

  it("deploy/infra/nats-values.yaml: the chart's config includes the accounts of the generated ConfigMap", () => {
    const values = parse(read("deploy/infra/nats-values.yaml")) as Yaml;
    const mountPath = String(
      at(
        (at(values, "container", "patch") as Yaml[]).find((p) => at(p, "path") === "/volumeMounts/-") ?? null,
        "value",
        "mountPath",
      ),
    );
    const configMap = parse(readFileSync(join(dir, "out", "k8s", "nats-config.configmap.yaml"), "utf8")) as Yaml;
    expect(at(configMap, "metadata", "name")).toBe("agentmesh-nats-config");
    const accounts = String(at(configMap, "data", "accounts.conf"));
    // one account, the one the ScaledObjects name, with a user per service
    const parsed = JSON.parse(accounts) as { accounts: Record<string, { users: unknown[] }> };
    expect(Object.keys(parsed.accounts)).toEqual([natsAccountName(PREFIX)]);
    expect(parsed.accounts[natsAccountName(PREFIX)]?.users).toHaveLength(ROLE_NAMES.length + SERVICE_USERS.length);

    // The pod's file system, under `root`: the chart's config at /etc/nats-config/nats.conf, the
    // ConfigMap at its mount path. The chart renders `$include: x` as `include x`.
    const root = join(dir, "pod");
    const at_ = (p: string) => join(root, p);
    mkdirSync(at_(mountPath), { recursive: true });
    writeFileSync(join(at_(mountPath), "accounts.conf"), accounts);
    mkdirSync(at_("/etc/nats-config"), { recursive: true });
    const include = String(at(values, "config", "merge", "$include"));
    expect(posix.isAbsolute(include)).toBe(false);
    writeFileSync(
      at_("/etc/nats-config/nats.conf"),
      `port: 4222\nhttp_port: 8222\njetstream { store_dir: "${join(root, "data")}" }\ninclude ${include}\n`,
    );
    const result = check(["-c", at_("/etc/nats-config/nats.conf")]);
    expect(result.output).toContain("is valid");
    expect(result.status).toBe(0);
  });
});
