/**
 * Checks the deployment files against the code they deploy: docker-compose.yml, the Dockerfile,
 * and the kustomize tree in deploy/. The most likely drift is a renamed stream or consumer that
 * KEDA no longer finds, so the ScaledObjects are compared with `naming()` itself.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { naming, ROLE_NAMES } from "@agentmesh/contracts";
import { parseYaml, parseYamlDocuments, type Yaml } from "./yaml-lite.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const read = (path: string): string => readFileSync(join(ROOT, path), "utf8");
const names = naming("agentmesh");

type YamlMap = { [key: string]: Yaml };

function isMap(v: Yaml | undefined): v is YamlMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Follows a path of keys and indexes; undefined when any step is missing. */
function at(v: Yaml | undefined, ...path: (string | number)[]): Yaml | undefined {
  let cur = v;
  for (const step of path) {
    if (typeof step === "number") cur = Array.isArray(cur) ? cur[step] : undefined;
    else cur = isMap(cur) ? cur[step] : undefined;
  }
  return cur;
}

function map(v: Yaml | undefined, where: string): YamlMap {
  if (!isMap(v)) throw new Error(`${where}: expected a mapping, got ${JSON.stringify(v)}`);
  return v;
}

function list(v: Yaml | undefined, where: string): Yaml[] {
  if (!Array.isArray(v)) throw new Error(`${where}: expected a list, got ${JSON.stringify(v)}`);
  return v;
}

/** A compose `command`/`test` as argv, whether written as a list or a string. */
function argv(v: Yaml | undefined): string[] {
  if (Array.isArray(v)) return v.map(String);
  return typeof v === "string" ? v.split(/\s+/).filter(Boolean) : [];
}

/** True when `args` holds `flag` immediately followed by `value`. */
function hasPair(args: readonly string[], flag: string, value: string): boolean {
  return args.some((a, i) => a === flag && args[i + 1] === value);
}

/** Every object of a kustomization, following `resources` into files and directories. */
function kustomizeObjects(dir: string): YamlMap[] {
  const k = map(parseYaml(read(join(dir, "kustomization.yaml"))), `${dir}/kustomization.yaml`);
  return list(k.resources ?? [], `${dir} resources`).flatMap((r) => {
    const path = join(dir, String(r));
    if (statSync(join(ROOT, path)).isDirectory()) return kustomizeObjects(path);
    return parseYamlDocuments(read(path)).map((d, i) => map(d, `${path}#${i}`));
  });
}

const ofKind = (objects: readonly YamlMap[], kind: string): YamlMap[] => objects.filter((o) => o.kind === kind);
const nameOf = (o: YamlMap): string => String(at(o, "metadata", "name"));

describe("yaml-lite reads what the deployment files use", () => {
  it("parses mappings, sequences, flow collections, quotes, block scalars and documents", () => {
    const docs = parseYamlDocuments(
      [
        "# comment",
        "a: 1",
        "b: \"x: y\" # trailing",
        "c: [\"-js\", -m, 8222]",
        "d: { k: v, n: [1, 2] }",
        "e:",
        "  - name: one",
        "    value: 'it''s'",
        "  - plain text",
        "f: |-",
        "  - op: replace",
        "    path: /x",
        "g:",
        "---",
        "h: true",
      ].join("\n"),
    );
    expect(docs).toEqual([
      {
        a: 1,
        b: "x: y",
        c: ["-js", "-m", 8222],
        d: { k: "v", n: [1, 2] },
        e: [{ name: "one", value: "it's" }, "plain text"],
        f: "- op: replace\n  path: /x",
        g: null,
      },
      { h: true },
    ]);
  });

  it("refuses what it does not understand instead of misreading it", () => {
    expect(() => parseYaml("a: &x 1\nb: *x")).toThrow(/anchors/);
    expect(() => parseYaml("a: 1\na: 2")).toThrow(/duplicate/);
    expect(() => parseYaml("a: [1,\n  2]")).toThrow();
  });
});

describe("docker-compose.yml", () => {
  const compose = map(parseYaml(read("docker-compose.yml")), "docker-compose.yml");
  const services = map(compose.services, "services");
  const apps = ["coordinator", ...ROLE_NAMES];

  it("has nats, redis, the coordinator and one service per agent role", () => {
    expect(Object.keys(services).sort()).toEqual(["nats", "redis", ...apps].sort());
  });

  it("runs NATS 2.10 with JetStream, monitoring on 8222 and a volume", () => {
    const nats = map(services.nats, "nats");
    expect(String(nats.image)).toMatch(/^nats:2\.10-alpine$/);
    const args = argv(nats.command);
    expect(args).toContain("-js");
    expect(hasPair(args, "-m", "8222")).toBe(true);
    expect(list(nats.ports, "nats ports").map(String)).toContain("127.0.0.1:8222:8222");
    expect(list(nats.volumes, "nats volumes").length).toBeGreaterThan(0);
  });

  it("runs Redis 7.2 durably: AOF, appendfsync always, noeviction, a volume", () => {
    const redis = map(services.redis, "redis");
    expect(String(redis.image)).toMatch(/^redis:7\.2-alpine$/);
    const args = argv(redis.command);
    expect(hasPair(args, "--appendonly", "yes")).toBe(true);
    expect(hasPair(args, "--appendfsync", "always")).toBe(true);
    expect(hasPair(args, "--maxmemory-policy", "noeviction")).toBe(true);
    expect(list(redis.volumes, "redis volumes").length).toBeGreaterThan(0);
  });

  it("publishes ports on loopback only", () => {
    for (const [name, svc] of Object.entries(services)) {
      for (const port of list(at(svc, "ports") ?? [], `${name} ports`)) expect(String(port), name).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it.each(apps)("%s: built from the one Dockerfile, wired to the compose nats/redis, healthy, restarted", (name) => {
    const svc = map(services[name], name);
    expect(svc.build).toBe(".");
    expect(svc.image).toBe("agentmesh:local");
    const env = map(svc.environment, `${name} environment`);
    expect(env.SERVICE).toBe(name);
    expect(existsSync(join(ROOT, "services", name, "src", "main.ts")), `services/${name}/src/main.ts`).toBe(true);
    expect(env.NATS_URL).toBe("nats://nats:4222");
    if (name === "coordinator") {
      expect(env.REDIS_URL).toBe("redis://redis:6379");
    } else {
      expect(env.AGENTMESH_LLM_BASE_URL).toBe("${AGENTMESH_LLM_BASE_URL:-}");
      expect(env.AGENTMESH_LLM_API_KEY).toBe("${AGENTMESH_LLM_API_KEY:-}");
    }
    expect(at(svc, "depends_on", "nats", "condition")).toBe("service_healthy");
  });

  it("every service has a healthcheck and restarts unless stopped", () => {
    for (const [name, svc] of Object.entries(services)) {
      expect(argv(at(svc, "healthcheck", "test")).length, name).toBeGreaterThan(1);
      expect(at(svc, "restart"), name).toBe("unless-stopped");
    }
  });
});

describe("Dockerfile", () => {
  const dockerfile = read("Dockerfile");
  const entry = read("deploy/docker/entrypoint.sh");

  it("builds one image from node:20-bookworm-slim with pnpm 10 and the frozen lockfile", () => {
    expect(dockerfile).toMatch(/^FROM node:20-bookworm-slim$/m);
    expect(dockerfile).toContain("npm i -g pnpm@10");
    expect(dockerfile).toContain("pnpm install --frozen-lockfile --prod=false");
  });

  it("runs as a non-root user, with node receiving SIGTERM", () => {
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBeDefined();
    expect(["root", "0"]).not.toContain(users.at(-1));
    // Exec form, so no shell sits between the init process and node; the script `exec`s node.
    expect(dockerfile).toMatch(/^ENTRYPOINT \[.*"\/usr\/bin\/tini", "--"/m);
    expect(entry).toMatch(/^exec node --import tsx .*"services\/\$service\/src\/main\.ts" "\$@"$/m);
  });

  it("copies only files that exist", () => {
    for (const m of dockerfile.matchAll(/^COPY\s+(?:--\S+\s+)*(.+)\s+\S+$/gm)) {
      for (const source of (m[1] ?? "").split(/\s+/)) expect(existsSync(join(ROOT, source)), `COPY ${source}`).toBe(true);
    }
  });

  it("keeps dependencies and VCS data out of the build context", () => {
    const ignored = read(".dockerignore").split("\n").map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(["**/node_modules", ".git"]));
  });
});

describe("deploy/ (kustomize + KEDA)", () => {
  const base = kustomizeObjects("deploy/base");
  const deployments = ofKind(base, "Deployment");
  const scaled = ofKind(base, "ScaledObject");

  it("every agent role has a Deployment and a ScaledObject, and the coordinator a Deployment", () => {
    expect(deployments.map(nameOf).sort()).toEqual(["coordinator", ...ROLE_NAMES].sort());
    expect(scaled.map(nameOf).sort()).toEqual([...ROLE_NAMES].sort());
  });

  it.each([...ROLE_NAMES])("%s: the ScaledObject watches naming('agentmesh')'s tasks stream and role consumer", (role) => {
    const so = scaled.find((o) => nameOf(o) === role);
    expect(at(so, "spec", "scaleTargetRef", "name")).toBe(role);
    const triggers = list(at(so, "spec", "triggers"), `${role} triggers`);
    expect(triggers).toHaveLength(1);
    expect(at(triggers[0], "type")).toBe("nats-jetstream");
    expect(at(triggers[0], "metadata", "stream")).toBe(names.streams.tasks);
    expect(at(triggers[0], "metadata", "consumer")).toBe(names.consumers.role(role));
    expect(at(triggers[0], "metadata", "account")).toBe("$G");
    expect(String(at(triggers[0], "metadata", "natsServerMonitoringEndpoint"))).toMatch(/:8222$/);
    // KEDA owns the replica count.
    expect(at(deployments.find((d) => nameOf(d) === role), "spec", "replicas")).toBeUndefined();
  });

  it.each(["coordinator", ...ROLE_NAMES])("%s: non-root, 60 s grace, health probes, runs its own service", (name) => {
    const pod = map(at(deployments.find((d) => nameOf(d) === name), "spec", "template", "spec"), `${name} pod`);
    expect(pod.terminationGracePeriodSeconds).toBe(60);
    expect(at(pod, "securityContext", "runAsNonRoot")).toBe(true);
    expect(at(pod, "securityContext", "runAsUser")).not.toBe(0);
    const container = map(at(pod, "containers", 0), `${name} container`);
    expect(container.image).toBe("agentmesh");
    expect(argv(container.args)).toEqual([name]);
    for (const probe of ["readinessProbe", "livenessProbe"]) {
      const cmd = argv(at(container, probe, "exec", "command"));
      expect(cmd.slice(-3), `${name} ${probe}`).toEqual(["health", "--service", name]);
      expect(cmd).toContain("services/cli/src/main.ts");
    }
  });

  it.each(["dev", "prod"])("overlays/%s: builds on base, keeps names (no prefix/suffix for KEDA's sake)", (env) => {
    const dir = `deploy/overlays/${env}`;
    const k = map(parseYaml(read(`${dir}/kustomization.yaml`)), dir);
    expect(list(k.resources, `${dir} resources`)).toContain("../../base");
    expect(k.namePrefix).toBeUndefined();
    expect(k.nameSuffix).toBeUndefined();
    expect(k.namespace).toBe("agentmesh");
    const objects = kustomizeObjects(dir);
    expect(ofKind(objects, "ScaledObject")).toHaveLength(ROLE_NAMES.length);
  });

  it("NATS chart values turn on JetStream with a file store and the monitoring port", () => {
    const values = parseYaml(read("deploy/infra/nats-values.yaml"));
    expect(at(values, "config", "jetstream", "enabled")).toBe(true);
    expect(at(values, "config", "jetstream", "fileStore", "enabled")).toBe(true);
    expect(at(values, "config", "monitor", "enabled")).toBe(true);
  });
});
