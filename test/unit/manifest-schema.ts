/**
 * Checks rendered Kubernetes objects against the API's schemas: the built-in kinds with the
 * `kubernetes-models` 4.x validators (generated from the Kubernetes OpenAPI document) and KEDA's
 * with `@kubernetes-models/keda` 0.4.x (generated from its CRDs). Those validators check types,
 * enums and required fields but accept any unknown field, where the API server (strict field
 * validation, `kubectl apply --validate=strict`) refuses one. So each object is validated through
 * a proxy that records which fields the validator reads: a generated validator reads every field
 * its schema defines and enumerates the keys of a map, so a field it never looked at is one the
 * schema does not have.
 */
import { execFileSync } from "node:child_process";
import * as apps from "kubernetes-models/apps/v1";
import * as autoscaling from "kubernetes-models/autoscaling/v2";
import * as policy from "kubernetes-models/policy/v1";
import * as core from "kubernetes-models/v1";
import * as keda from "@kubernetes-models/keda/keda.sh/v1alpha1";
import { parseAllDocuments } from "yaml";
import { ROOT } from "./test-support.js";

/** A model class of either package: a constructor whose instances have `validate()`. */
interface ModelClass {
  readonly apiVersion: string;
  readonly kind: string;
  new (data?: never): { validate(): void };
}

const GROUPS: Record<string, Record<string, unknown>> = {
  v1: core,
  "apps/v1": apps,
  "policy/v1": policy,
  "autoscaling/v2": autoscaling,
  "keda.sh/v1alpha1": keda,
};

function modelFor(apiVersion: string, kind: string): ModelClass | null {
  const candidate: unknown = GROUPS[apiVersion]?.[kind];
  if (typeof candidate !== "function") return null;
  const model = candidate as ModelClass;
  return model.apiVersion === apiVersion && model.kind === kind ? model : null;
}

/** The API versions whose kinds can be checked. */
export const CHECKED_API_VERSIONS = Object.keys(GROUPS);

type Reads = Set<PropertyKey> | "all";

/** Wraps `value` so that every property read (or key enumeration) of every nested object is recorded in `reads`. */
function watched(value: unknown, reads: WeakMap<object, Reads>, proxies: WeakMap<object, object>): unknown {
  if (value === null || typeof value !== "object") return value;
  const known = proxies.get(value);
  if (known) return known;
  const note = (t: object, k: PropertyKey): void => {
    const r = reads.get(t);
    if (r === "all") return;
    reads.set(t, (r ?? new Set()).add(k));
  };
  const proxy = new Proxy(value, {
    get(t, k, receiver) {
      note(t, k);
      return watched(Reflect.get(t, k, receiver), reads, proxies);
    },
    has(t, k) {
      note(t, k);
      return Reflect.has(t, k);
    },
    getOwnPropertyDescriptor(t, k) {
      note(t, k);
      return Reflect.getOwnPropertyDescriptor(t, k);
    },
    ownKeys(t) {
      reads.set(t, "all");
      return Reflect.ownKeys(t);
    },
  });
  proxies.set(value, proxy);
  return proxy;
}

/** The paths of fields under `value` that the validator never read. */
function unreadFields(value: unknown, reads: WeakMap<object, Reads>, path: string): string[] {
  if (value === null || typeof value !== "object") return [];
  const r = reads.get(value);
  if (Array.isArray(value)) return value.flatMap((v, i) => unreadFields(v, reads, `${path}/${i}`));
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => {
    if (r !== "all" && !r?.has(k)) return [`${path}/${k}`];
    return unreadFields(v, reads, `${path}/${k}`);
  });
}

/** What is wrong with one object: no schema for its kind, schema violations, unknown fields. Empty when valid. */
export function schemaProblems(object: unknown): string[] {
  const o = (object ?? {}) as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
  const where = `${String(o.kind)}/${String(o.metadata?.name)}`;
  const Model = modelFor(String(o.apiVersion), String(o.kind));
  if (!Model) return [`${where}: no schema for ${String(o.apiVersion)} ${String(o.kind)}`];
  return fragmentProblems(Model, object, where);
}

/**
 * What is wrong with `value` as an instance of one model class (`core.SecurityContext`, …): a part
 * of an object, as a Helm chart's values carry them. Empty when valid.
 */
export function fragmentProblems(model: unknown, value: unknown, where: string): string[] {
  const Model = model as ModelClass;
  const problems: string[] = [];
  const reads = new WeakMap<object, Reads>();
  const clone = structuredClone(value);
  const proxy = watched(clone, reads, new WeakMap());
  try {
    // the model's validate() runs the generated validator on `this`: here the recording proxy
    new Model().validate.call(proxy);
  } catch (e) {
    problems.push(`${where}: ${(e as Error).message}`);
  }
  for (const field of unreadFields(clone, reads, "")) problems.push(`${where}: unknown field ${field}`);
  return problems;
}

/** The objects `kubectl kustomize <dir>` renders (the real kustomize: patches, generators, images), `dir` under `root`. */
export function renderKustomize(dir: string, root = ROOT): Array<Record<string, unknown>> {
  let out: string;
  try {
    out = execFileSync("kubectl", ["kustomize", dir], {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (e) {
    throw new Error(`\`kubectl kustomize ${dir}\` failed (kubectl is needed to render the overlays): ${String(e)}`);
  }
  return parseAllDocuments(out).map((d) => d.toJS() as Record<string, unknown>);
}
