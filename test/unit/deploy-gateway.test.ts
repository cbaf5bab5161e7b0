/**
 * The gateway's deployment: its compose service and its Kubernetes objects. Beside what
 * deploy.test.ts checks for every service (its own NATS seed, its Redis user), these hold the parts
 * only an HTTP service has: a loopback-only port, HTTP probes on /readyz and /healthz, a stop grace
 * longer than its drain, API keys from a file, a Service, an autoscaler and a disruption budget.
 */
import { existsSync } from "node:fs";
import { join, posix } from "node:path";
import { describe, expect, it } from "vitest";
import {
  argv,
  at,
  kustomizeObjects,
  list,
  map,
  nameOf,
  ofKind,
  parseYaml,
  read,
  ROOT,
  seedMounts,
  type Yaml,
  type YamlMap,
} from "./test-support.js";

/**
 * How long the gateway takes at most to stop after SIGTERM: runUntilSignalled's default grace
 * (25 s, packages/service-kit/src/lifecycle.ts) plus its 5 s hard exit. Compose and Kubernetes
 * must wait longer, or they kill it while streams are still ending.
 */
const GATEWAY_STOP_S = 30;

/** Seconds of a compose duration such as `40s` or `1m30s`. */
function seconds(v: Yaml | undefined): number {
  const m = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(String(v));
  if (!m || (m[1] === undefined && m[2] === undefined)) throw new Error(`not a duration: ${JSON.stringify(v)}`);
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

describe("docker-compose.yml: the gateway", () => {
  const services = map(at(parseYaml(read("docker-compose.yml")), "services"), "services");

  it("its own NATS user and Redis user, API keys from .env, port 8080 on loopback, healthy when /readyz is", () => {
    const gw = map(services.gateway, "gateway");
    const env = map(gw.environment, "gateway environment");
    expect(env.SERVICE).toBe("gateway");
    expect(seedMounts(gw).map((m) => m.source)).toEqual(["./.nats/seeds/gateway.nk"]);
    expect(String(env.REDIS_URL)).toMatch(/^redis:\/\/gateway:/);
    // in the container it listens on every interface; only the host's loopback publishes it
    expect(env.AGENTMESH_GATEWAY_HOST).toBe("0.0.0.0");
    expect(list(gw.ports, "gateway ports").map(String)).toEqual([
      `127.0.0.1:8080:${String(env.AGENTMESH_GATEWAY_PORT)}`,
    ]);
    expect(env.AGENTMESH_API_KEYS).toBe("${AGENTMESH_API_KEYS:-}");
    // anonymous access only when .env asks for it
    expect(env.AGENTMESH_GATEWAY_ANONYMOUS).toBe("${AGENTMESH_GATEWAY_ANONYMOUS:-0}");
    // curl (installed in the image), not a node process per probe
    expect(argv(at(gw, "healthcheck", "test"))).toEqual([
      "CMD",
      "curl",
      "-sS",
      "--fail-with-body",
      `http://127.0.0.1:${String(env.AGENTMESH_GATEWAY_PORT)}/readyz`,
    ]);
    expect(at(gw, "depends_on", "redis", "condition")).toBe("service_healthy");
    expect(seconds(gw.stop_grace_period)).toBeGreaterThan(GATEWAY_STOP_S);
  });
});

describe("deploy/base: the gateway", () => {
  const base = kustomizeObjects("deploy/base");
  const deployments = ofKind(base, "Deployment");
  const deployment = deployments.find((d) => nameOf(d) === "gateway");
  const pod = map(at(deployment, "spec", "template", "spec"), "gateway pod");
  const container = map(at(pod, "containers", 0), "gateway container");
  const env = list(container.env, "gateway env").map((e) => map(e, "gateway env entry"));
  const envOf = (name: string) => env.find((e) => e.name === name);
  const labels = map(at(deployment, "spec", "template", "metadata", "labels"), "gateway pod labels");
  const selects = (o: YamlMap | undefined, path: string[]) =>
    Object.entries(map(at(o, ...path), `${nameOf(o ?? {})} selector`)).every(([k, v]) => labels[k] === v);
  const port = list(container.ports, "gateway ports").map((p) => map(p, "gateway port"))[0];

  it("runs the gateway service as non-root, listening on every interface of the pod on its container port", () => {
    expect(argv(container.args)).toEqual(["gateway"]);
    expect(existsSync(join(ROOT, "services/gateway/src/main.ts"))).toBe(true);
    expect(at(pod, "securityContext", "runAsNonRoot")).toBe(true);
    expect(at(container, "securityContext", "readOnlyRootFilesystem")).toBe(true);
    expect(envOf("AGENTMESH_GATEWAY_HOST")?.value).toBe("0.0.0.0");
    expect(String(envOf("AGENTMESH_GATEWAY_PORT")?.value)).toBe(String(port?.containerPort));
    expect(at(container, "resources", "requests", "cpu"), "the HPA needs a CPU request").toBeDefined();
    expect(at(container, "resources", "limits", "memory")).toBeDefined();
  });

  it("is ready on /readyz and alive on /healthz (HTTP, its own port)", () => {
    expect(at(container, "readinessProbe", "httpGet")).toEqual({ path: "/readyz", port: port?.name });
    expect(at(container, "livenessProbe", "httpGet")).toEqual({ path: "/healthz", port: port?.name });
  });

  it("gets longer to stop than its drain takes, the preStop pause included", () => {
    const preStop = argv(at(container, "lifecycle", "preStop", "exec", "command"));
    expect(preStop[0]).toBe("sleep");
    expect(Number(pod.terminationGracePeriodSeconds)).toBeGreaterThan(GATEWAY_STOP_S + Number(preStop[1]));
  });

  it("logs in to Redis as the gateway ACL user, from a required Secret that overrides the shared REDIS_URL", () => {
    expect(env.filter((e) => e.name === "REDIS_URL")).toEqual([
      { name: "REDIS_URL", valueFrom: { secretKeyRef: { name: "agentmesh-redis-gateway", key: "url" } } },
    ]);
    expect(read("deploy/base/gateway.yaml")).toContain("redis://gateway:<password>@");
  });

  it("reads hashed API keys from a Secret mounted read-only as AGENTMESH_API_KEYS_FILE, none inline", () => {
    expect(envOf("AGENTMESH_API_KEYS")).toBeUndefined();
    const file = String(envOf("AGENTMESH_API_KEYS_FILE")?.value);
    const volume = list(pod.volumes, "gateway volumes")
      .map((v) => map(v, "gateway volume"))
      .find((v) => at(v, "secret", "secretName") === "agentmesh-gateway-api-keys");
    const mount = list(container.volumeMounts, "gateway volumeMounts").find((m) => at(m, "name") === volume?.name);
    expect(at(mount, "readOnly")).toBe(true);
    const items = list(at(volume, "secret", "items"), "api-keys items");
    expect(items).toHaveLength(1);
    expect(posix.join(String(at(mount, "mountPath")), String(at(items[0], "path")))).toBe(file);
    expect(Number(at(volume, "secret", "defaultMode")) & 0o007, "not world-readable").toBe(0);
    // compose's documented file alternative (the comment above its gateway) uses the same path
    expect(read("docker-compose.yml")).toContain(`AGENTMESH_API_KEYS_FILE: ${file}`);
  });

  it("has a Service on its port, an autoscaler of at least two replicas and a disruption budget", () => {
    const service = ofKind(base, "Service").find((o) => nameOf(o) === "gateway");
    expect(selects(service, ["spec", "selector"])).toBe(true);
    expect(list(at(service, "spec", "ports"), "service ports").map((p) => at(p, "targetPort"))).toEqual([port?.name]);
    const hpa = ofKind(base, "HorizontalPodAutoscaler").find((o) => nameOf(o) === "gateway");
    expect(at(hpa, "spec", "scaleTargetRef")).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "gateway" });
    expect(Number(at(hpa, "spec", "minReplicas"))).toBeGreaterThanOrEqual(2);
    // the autoscaler owns the replica count
    expect(at(deployment, "spec", "replicas")).toBeUndefined();
    const pdb = ofKind(base, "PodDisruptionBudget").find((o) => nameOf(o) === "gateway");
    expect(selects(pdb, ["spec", "selector", "matchLabels"])).toBe(true);
    expect(at(pdb, "spec", "maxUnavailable")).toBe(1);
  });
});

describe.each(["dev", "prod"])("deploy/overlays/%s: the gateway", (overlay) => {
  it("keeps an autoscaler on the gateway Deployment", () => {
    const hpa = ofKind(kustomizeObjects(`deploy/overlays/${overlay}`), "HorizontalPodAutoscaler").find(
      (o) => nameOf(o) === "gateway",
    );
    expect(at(hpa, "spec", "scaleTargetRef", "name")).toBe("gateway");
    const min = Number(at(hpa, "spec", "minReplicas"));
    expect(min).toBeGreaterThanOrEqual(1);
    expect(Number(at(hpa, "spec", "maxReplicas"))).toBeGreaterThanOrEqual(min);
  });
});
