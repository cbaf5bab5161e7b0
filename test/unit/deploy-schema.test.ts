/**
 * The rendered dev and prod manifests against the Kubernetes and KEDA schemas (every object, an
 * unknown field or a wrong type fails), the pods' security settings and disruption rules, the
 * production topology's wiring (NATS cluster, Redis Sentinel), and the NATS chart values where
 * a schema exists for them. Rendering is `kubectl kustomize`, so overlays' patches count.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as core from "kubernetes-models/v1";
import { beforeAll, describe, expect, it } from "vitest";
import { CHECKED_API_VERSIONS, fragmentProblems, renderKustomize, schemaProblems } from "./manifest-schema.js";
import { at, isMap, list, map, parseYaml, read, ROOT, type Yaml, type YamlMap } from "./test-support.js";

const OVERLAYS = ["dev", "prod"] as const;
type Overlay = (typeof OVERLAYS)[number];
const rendered: Partial<Record<Overlay, YamlMap[]>> = {};
const objectsOf = (env: Overlay): YamlMap[] => rendered[env] ?? [];
const named = (objects: YamlMap[], kind: string, name: string): YamlMap | undefined =>
  objects.find((o) => o.kind === kind && at(o, "metadata", "name") === name);
const WORKLOADS = ["Deployment", "StatefulSet"];

beforeAll(() => {
  for (const env of OVERLAYS) rendered[env] = renderKustomize(`deploy/overlays/${env}`) as YamlMap[];
}, 60_000);

describe("every rendered object validates against the Kubernetes and KEDA schemas", () => {
  it.each(OVERLAYS)("overlays/%s: every object, no unknown field, no wrong type", (env) => {
    const objects = objectsOf(env);
    expect(objects.length).toBeGreaterThan(40);
    const problems = objects.flatMap(schemaProblems);
    const kinds = [...new Set(objects.map((o) => `${String(o.kind)}`))].sort();
    console.info(
      `[deploy-schema] overlays/${env}: ${objects.length} objects of ${kinds.length} kinds (${kinds.join(", ")}), ${problems.length} problems`,
    );
    expect(problems).toEqual([]);
    // every kind rendered is one the check has a schema for
    for (const o of objects) expect(CHECKED_API_VERSIONS, String(o.kind)).toContain(o.apiVersion);
  });

  // Each planted mistake must be reported at its path; counted in the test's output.
  const PLANTED: Array<[string, (objects: YamlMap[]) => void, RegExp]> = [
    [
      "an unknown field in a container's securityContext",
      (o) =>
        (map(
          at(named(o, "Deployment", "executor"), "spec", "template", "spec", "containers", 0, "securityContext"),
          "sc",
        ).runAsNonroot = true),
      /^Deployment\/executor: unknown field \/spec\/template\/spec\/containers\/0\/securityContext\/runAsNonroot$/,
    ],
    [
      "an unknown field at the top of a pod spec",
      (o) => (map(at(named(o, "Deployment", "coordinator"), "spec", "template", "spec"), "pod").hostUser = false),
      /^Deployment\/coordinator: unknown field \/spec\/template\/spec\/hostUser$/,
    ],
    [
      "a string where the schema wants an integer",
      (o) => (map(at(named(o, "StatefulSet", "redis"), "spec"), "spec").replicas = "2"),
      /^StatefulSet\/redis: data\/spec\/replicas must be integer/,
    ],
    [
      "an unknown field in a KEDA ScaledObject",
      (o) => (map(at(named(o, "ScaledObject", "planner"), "spec"), "spec").minReplicas = 2),
      /^ScaledObject\/planner: unknown field \/spec\/minReplicas$/,
    ],
    [
      "a wrong type in a KEDA ScaledObject",
      (o) => (map(at(named(o, "ScaledObject", "critic"), "spec"), "spec").pollingInterval = "15"),
      /^ScaledObject\/critic: data\/spec\/pollingInterval must be integer/,
    ],
    [
      "an unknown field in a PodDisruptionBudget",
      (o) => (map(at(named(o, "PodDisruptionBudget", "redis-sentinel"), "spec"), "spec").minAvailble = 2),
      /^PodDisruptionBudget\/redis-sentinel: unknown field \/spec\/minAvailble$/,
    ],
    [
      "a kind the check has no schema for",
      (o) => (map(named(o, "Service", "gateway"), "service").apiVersion = "v2"),
      /^Service\/gateway: no schema for v2 Service$/,
    ],
  ];

  it.each(PLANTED)("a planted mistake fails: %s", (_, plant, expected) => {
    const objects = structuredClone(objectsOf("prod"));
    plant(objects);
    const problems = objects.flatMap(schemaProblems);
    expect(problems).toEqual([expect.stringMatching(expected)]);
  });

  it("a wrong field planted through an overlay's patch fails after kustomize renders it", () => {
    const root = mkdtempSync(join(tmpdir(), "deploy-schema-"));
    try {
      cpSync(join(ROOT, "deploy"), join(root, "deploy"), { recursive: true });
      const k = join(root, "deploy/overlays/prod/kustomization.yaml");
      writeFileSync(
        k,
        `${readFileSync(k, "utf8")}  - target:\n      kind: Deployment\n      name: gateway\n    patch: |-\n      - op: add\n        path: /spec/template/spec/containers/0/readinessProbe/periodSecond\n        value: 5\n`,
      );
      const problems = renderKustomize("deploy/overlays/prod", root).flatMap(schemaProblems);
      expect(problems).toEqual([
        "Deployment/gateway: unknown field /spec/template/spec/containers/0/readinessProbe/periodSecond",
      ]);
      console.info(`[deploy-schema] planted mistakes: ${PLANTED.length + 1} planted, each one reported`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 30_000);
});

/** The pod template of a workload, and its containers (init containers included). */
function podOf(w: YamlMap): { pod: YamlMap; containers: YamlMap[] } {
  const pod = map(at(w, "spec", "template", "spec"), `${String(at(w, "metadata", "name"))} pod`);
  const containers = [...list(pod.containers, "containers"), ...list(pod.initContainers ?? [], "initContainers")];
  return { pod, containers: containers.map((c) => map(c, "container")) };
}
const labelsOf = (w: YamlMap): YamlMap => map(at(w, "spec", "template", "metadata", "labels"), "pod labels");
const selects = (selector: Yaml | undefined, labels: YamlMap): boolean => {
  const match = at(selector, "matchLabels");
  return isMap(match) && Object.entries(match).every(([k, v]) => labels[k] === v);
};

describe.each(OVERLAYS)("overlays/%s: pods as production runs them", (env) => {
  const workloads = () => objectsOf(env).filter((o) => WORKLOADS.includes(String(o.kind)));

  it("every pod: non-root, RuntimeDefault seccomp, no service account token", () => {
    expect(workloads().length).toBeGreaterThan(10);
    for (const w of workloads()) {
      const { pod } = podOf(w);
      const name = String(at(w, "metadata", "name"));
      expect(at(pod, "securityContext", "runAsNonRoot"), name).toBe(true);
      expect(Number(at(pod, "securityContext", "runAsUser")), name).toBeGreaterThan(0);
      expect(at(pod, "securityContext", "seccompProfile"), name).toEqual({ type: "RuntimeDefault" });
      expect(pod.automountServiceAccountToken, name).toBe(false);
      expect(pod.hostPID ?? pod.hostIPC ?? pod.hostNetwork, name).toBeUndefined();
    }
  });

  it("every container: no privilege escalation, read-only root, ALL capabilities dropped and none added, requests and a memory limit", () => {
    for (const w of workloads()) {
      for (const c of podOf(w).containers) {
        const name = `${String(at(w, "metadata", "name"))}/${String(c.name)}`;
        expect(at(c, "securityContext", "allowPrivilegeEscalation"), name).toBe(false);
        expect(at(c, "securityContext", "readOnlyRootFilesystem"), name).toBe(true);
        expect(at(c, "securityContext", "capabilities"), name).toEqual({ drop: ["ALL"] });
        expect(at(c, "securityContext", "privileged"), name).toBeUndefined();
        expect(at(c, "securityContext", "runAsUser") ?? 1, name).not.toBe(0);
        expect(at(c, "resources", "requests", "cpu"), name).toBeDefined();
        expect(at(c, "resources", "requests", "memory"), name).toBeDefined();
        expect(at(c, "resources", "limits", "memory"), name).toBeDefined();
      }
    }
  });

  it("only the executor's container relaxes seccomp and AppArmor, and only in prod (its sandbox makes user namespaces)", () => {
    const relaxed = workloads().flatMap((w) =>
      podOf(w)
        .containers.filter(
          (c) => at(c, "securityContext", "seccompProfile") || at(c, "securityContext", "appArmorProfile"),
        )
        .map((c) => ({ workload: at(w, "metadata", "name"), container: c.name, sc: c.securityContext })),
    );
    if (env === "dev") return expect(relaxed).toEqual([]);
    expect(relaxed).toEqual([
      {
        workload: "executor",
        container: "executor",
        sc: {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
          seccompProfile: { type: "Localhost", localhostProfile: "agentmesh/executor-sandbox.json" },
          appArmorProfile: { type: "Unconfined" },
        },
      },
    ]);
  });

  it("every workload has a PodDisruptionBudget that still lets a drain evict one pod", () => {
    const pdbs = objectsOf(env).filter((o) => o.kind === "PodDisruptionBudget");
    for (const w of workloads()) {
      const name = String(at(w, "metadata", "name"));
      const mine = pdbs.filter((p) => selects(at(p, "spec", "selector"), labelsOf(w)));
      expect(mine, name).toHaveLength(1);
      const spec = map(at(mine[0], "spec"), "pdb spec");
      const least = minReplicas(env, w);
      if (spec.maxUnavailable !== undefined) expect(Number(spec.maxUnavailable), name).toBeGreaterThanOrEqual(1);
      else expect(Number(spec.minAvailable), name).toBeLessThan(least);
    }
  });

  it("every workload spreads over nodes and zones; in prod a role's replicas never share a node, and there are two at least", () => {
    for (const w of workloads()) {
      const name = String(at(w, "metadata", "name"));
      const spread = list(podOf(w).pod.topologySpreadConstraints, `${name} topologySpreadConstraints`);
      const byKey = (key: string) => spread.find((s) => at(s, "topologyKey") === key);
      for (const key of ["kubernetes.io/hostname", "topology.kubernetes.io/zone"].slice(
        0,
        w.kind === "StatefulSet" ? 1 : 2,
      )) {
        expect(byKey(key), `${name} ${key}`).toBeDefined();
        expect(selects(at(byKey(key), "labelSelector"), labelsOf(w)), `${name} ${key} selects its own pods`).toBe(true);
        expect(at(byKey(key), "maxSkew"), name).toBe(1);
      }
      if (env === "prod") {
        expect(at(byKey("kubernetes.io/hostname"), "whenUnsatisfiable"), name).toBe("DoNotSchedule");
        expect(minReplicas(env, w), name).toBeGreaterThanOrEqual(2);
      }
    }
  });
});

/** The fewest replicas a workload runs with: its ScaledObject's or HPA's minimum, else spec.replicas (default 1). */
function minReplicas(env: Overlay, w: YamlMap): number {
  const name = String(at(w, "metadata", "name"));
  const so = named(objectsOf(env), "ScaledObject", name);
  if (so) return Number(at(so, "spec", "minReplicaCount") ?? 0);
  const hpa = named(objectsOf(env), "HorizontalPodAutoscaler", name);
  if (hpa) return Number(at(hpa, "spec", "minReplicas") ?? 1);
  return Number(at(w, "spec", "replicas") ?? 1);
}

describe("overlays/prod: the HA topology", () => {
  const config = () => {
    const cm = objectsOf("prod").find(
      (o) => o.kind === "ConfigMap" && String(at(o, "metadata", "name")).startsWith("agentmesh-config"),
    );
    return map(at(cm, "data"), "agentmesh-config data");
  };
  const natsProd = () => parseYaml(read("deploy/infra/nats-values-prod.yaml"));
  const redisConfig = () => map(at(named(objectsOf("prod"), "ConfigMap", "redis-config"), "data"), "redis-config");

  it("NATS: a 3-server JetStream cluster, streams at R3, NATS_URL naming every server of the chart's StatefulSet", () => {
    const servers = Number(at(natsProd(), "config", "cluster", "replicas"));
    expect(at(natsProd(), "config", "cluster", "enabled")).toBe(true);
    expect(servers).toBe(3);
    expect(config().AGENTMESH_STREAM_REPLICAS).toBe("3");
    // the chart's pods are <release>-<i> behind <release>-headless in the release's namespace
    expect(String(config().NATS_URL).split(",")).toEqual(
      Array.from({ length: servers }, (_, i) => `nats://nats-${i}.nats-headless.nats.svc.cluster.local:4222`),
    );
    // the accounts come from the base values, which the prod file is layered on
    expect(at(parseYaml(read("deploy/infra/nats-values.yaml")), "config", "merge", "$include")).toBeDefined();
    expect(at(natsProd(), "config", "merge")).toBeUndefined();
  });

  it("Redis: a primary and a replica, three Sentinels with a quorum of two, named in REDIS_SENTINELS", () => {
    const redis = named(objectsOf("prod"), "StatefulSet", "redis");
    const sentinels = named(objectsOf("prod"), "StatefulSet", "redis-sentinel");
    expect(at(redis, "spec", "replicas")).toBe(2);
    expect(at(sentinels, "spec", "replicas")).toBe(3);
    const script = String(redisConfig()["start-sentinel.sh"]);
    const monitor = /^sentinel monitor (\S+) \S+ 6379 (\d+)$/m.exec(script);
    expect(monitor?.[1]).toBe(config().REDIS_SENTINEL_MASTER);
    expect(Number(monitor?.[2])).toBe(2);
    expect(String(config().REDIS_SENTINELS).split(",")).toEqual(
      [0, 1, 2].map((i) => `redis-sentinel-${i}.redis-sentinel.agentmesh.svc.cluster.local:26379`),
    );
    for (const s of ["redis", "redis-sentinel"]) {
      expect(at(named(objectsOf("prod"), "Service", s), "spec", "clusterIP"), s).toBe("None");
      expect(at(named(objectsOf("prod"), "Service", s), "spec", "publishNotReadyAddresses"), s).toBe(true);
    }
    // both scripts ask every Sentinel the base named, by the names the headless services give
    for (const key of ["start-redis.sh", "start-sentinel.sh"])
      expect(String(redisConfig()[key])).toContain(
        'redis-cli -h "redis-sentinel-$i.redis-sentinel.agentmesh.svc.cluster.local" -p 26379',
      );
  });

  it("Redis: durable (AOF, fsync always, noeviction) on a volume per pod, the ACL file from its Secret, replicas logging in as `replica`", () => {
    const conf = String(redisConfig()["redis.conf"]).split("\n");
    for (const line of ["appendonly yes", "appendfsync always", "maxmemory-policy noeviction", "dir /data"])
      expect(conf).toContain(line);
    expect(conf).toContain("masteruser replica");
    const aclPath = /^aclfile (\S+)$/m.exec(String(redisConfig()["redis.conf"]))?.[1] ?? "";
    const redis = named(objectsOf("prod"), "StatefulSet", "redis");
    const { pod, containers } = podOf(map(redis, "redis"));
    const acl = list(pod.volumes, "volumes").find((v) => at(v, "secret", "secretName") === "agentmesh-redis-acl");
    const mount = list(containers[0]?.volumeMounts, "mounts").find((m) => at(m, "name") === at(acl, "name"));
    expect(`${String(at(mount, "mountPath"))}/${String(at(acl, "secret", "items", 0, "path"))}`).toBe(aclPath);
    expect(at(mount, "readOnly")).toBe(true);
    expect(at(redis, "spec", "volumeClaimTemplates", 0, "metadata", "name")).toBe("data");
    expect(list(containers[0]?.volumeMounts, "mounts")).toContainEqual({ name: "data", mountPath: "/data" });
    expect(String(redisConfig()["start-redis.sh"])).toMatch(/^ {2}echo "masterauth \$REPLICA_PASSWORD"$/m);
    expect(String(redisConfig()["start-sentinel.sh"])).toMatch(/^sentinel auth-user agentmesh sentinel$/m);
  });

  it("the coordinator logs in to Redis as its own ACL user; three of them, two kept through drains", () => {
    const coordinator = named(objectsOf("prod"), "Deployment", "coordinator");
    expect(at(coordinator, "spec", "replicas")).toBe(3);
    const env = list(at(coordinator, "spec", "template", "spec", "containers", 0, "env"), "env");
    expect(env).toContainEqual({
      name: "REDIS_URL",
      valueFrom: { secretKeyRef: { name: "agentmesh-redis-coordinator", key: "url" } },
    });
    expect(at(named(objectsOf("prod"), "PodDisruptionBudget", "coordinator"), "spec")).toEqual({
      minAvailable: 2,
      selector: { matchLabels: { "app.kubernetes.io/name": "coordinator" } },
    });
  });
});

// The NATS chart has no values.schema.json. Its keys, as its values.yaml (2.14.2) documents
// them, for the sections agentmesh sets; under `merge`, `patch` and `env` the chart takes
// Kubernetes objects, checked against their Kubernetes schema below.
const NATS_CHART_KEYS = new Set(
  (
    "config config.cluster config.cluster.enabled config.cluster.port config.cluster.replicas config.cluster.noAdvertise " +
    "config.cluster.routeURLs config.cluster.routeURLs.user config.cluster.routeURLs.password config.cluster.tls config.cluster.merge config.cluster.patch config.jetstream " +
    "config.jetstream.enabled config.jetstream.fileStore config.jetstream.fileStore.enabled config.jetstream.fileStore.dir " +
    "config.jetstream.fileStore.pvc config.jetstream.fileStore.pvc.enabled config.jetstream.fileStore.pvc.size " +
    "config.jetstream.fileStore.pvc.storageClassName config.jetstream.fileStore.pvc.merge config.jetstream.fileStore.pvc.patch " +
    "config.jetstream.fileStore.pvc.name config.jetstream.fileStore.maxSize config.jetstream.memoryStore " +
    "config.jetstream.memoryStore.enabled config.jetstream.memoryStore.maxSize config.jetstream.merge config.jetstream.patch " +
    "config.nats config.monitor config.monitor.enabled config.monitor.port config.monitor.tls config.serverNamePrefix " +
    "config.merge config.patch container container.image container.ports container.env container.merge container.patch " +
    "container.resources reloader reloader.enabled reloader.image reloader.env reloader.natsVolumeMountPrefixes " +
    "reloader.merge reloader.patch service service.enabled service.ports service.ports.monitor service.ports.monitor.enabled " +
    "service.merge service.patch service.name statefulSet statefulSet.merge statefulSet.patch podTemplate " +
    "podTemplate.configChecksumAnnotation podTemplate.topologySpreadConstraints podTemplate.merge podTemplate.patch " +
    "podDisruptionBudget podDisruptionBudget.enabled podDisruptionBudget.merge podDisruptionBudget.patch natsBox natsBox.enabled"
  ).split(" "),
);
/** Where the chart takes free-form content (a Kubernetes object, a config, an env map, a map keyed by topology key). */
const FREE = /^(?:.*\.(?:merge|patch|env)|podTemplate\.topologySpreadConstraints)$/;

function keyPaths(v: Yaml, prefix = ""): string[] {
  if (!isMap(v)) return [];
  return Object.entries(v).flatMap(([k, x]) => {
    const p = prefix ? `${prefix}.${k}` : k;
    return FREE.test(p) ? [p] : [p, ...keyPaths(x, p)];
  });
}

describe("NATS chart values (never rendered: Helm does not run here)", () => {
  const files = ["deploy/infra/nats-values.yaml", "deploy/infra/nats-values-prod.yaml"];

  it.each(files)("%s: every key is one the chart documents", (file) => {
    const unknown = keyPaths(parseYaml(read(file))).filter((p) => !NATS_CHART_KEYS.has(p));
    expect(unknown).toEqual([]);
  });

  it("a misspelt key and a Kubernetes part with an unknown field are caught", () => {
    expect(fragmentProblems(core.SecurityContext, { readOnlyRootFilesystem: true, dropAll: true }, "sc")).toEqual([
      "sc: unknown field /dropAll",
    ]);
    expect(
      keyPaths({ config: { jetstream: { filestore: { enabled: true } } } }).filter((p) => !NATS_CHART_KEYS.has(p)),
    ).toEqual(["config.jetstream.filestore", "config.jetstream.filestore.enabled"]);
  });

  it.each(files)("%s: the Kubernetes parts validate against their schemas", (file) => {
    const v = parseYaml(read(file));
    const checks: Array<[string, unknown, Yaml | undefined]> = [
      ["container.merge.securityContext", core.SecurityContext, at(v, "container", "merge", "securityContext")],
      ["reloader.merge.securityContext", core.SecurityContext, at(v, "reloader", "merge", "securityContext")],
      ["container.merge.resources", core.ResourceRequirements, at(v, "container", "merge", "resources")],
      [
        "podTemplate.merge.spec.securityContext",
        core.PodSecurityContext,
        at(v, "podTemplate", "merge", "spec", "securityContext"),
      ],
    ];
    for (const p of list(at(v, "container", "patch") ?? [], "container.patch"))
      checks.push(["container.patch", core.VolumeMount, at(p, "value")]);
    for (const p of list(at(v, "podTemplate", "patch") ?? [], "podTemplate.patch"))
      checks.push(["podTemplate.patch", core.Volume, at(p, "value")]);
    const spread = at(v, "podTemplate", "topologySpreadConstraints");
    // the chart adds topologyKey (the map's key) and the StatefulSet's labelSelector
    for (const [key, c] of Object.entries(isMap(spread) ? spread : {}))
      checks.push([
        "podTemplate.topologySpreadConstraints",
        core.TopologySpreadConstraint,
        { ...map(c, key), topologyKey: key },
      ]);
    let checked = 0;
    for (const [where, model, value] of checks) {
      if (value === undefined) continue;
      checked++;
      expect(fragmentProblems(model, value, where), where).toEqual([]);
    }
    expect(checked).toBeGreaterThan(0);
  });
});
