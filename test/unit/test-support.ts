/**
 * Reading the deployment files for the tests of test/unit/deploy*.test.ts: strict YAML parsing,
 * typed steps into the parsed values, and the kustomize tree followed through its resources.
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, parseAllDocuments } from "yaml";
import { ROLE_NAMES } from "@agentmesh/contracts";
import { SERVICE_USERS } from "@agentmesh/messaging";

/** The repository root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** A file of the repository, by its path from the root. */
export const read = (path: string): string => readFileSync(join(ROOT, path), "utf8");

/** A parsed YAML value. */
export type Yaml = unknown;
/** A parsed YAML mapping. */
export type YamlMap = { [key: string]: Yaml };

/** Parses one YAML document strictly (the `yaml` library throws on any error, duplicate keys too). */
export const parseYaml = (text: string): Yaml => parse(text) as Yaml;

/** Every document of a multi-document YAML file; throws on the first error. */
export function parseYamlDocuments(text: string): Yaml[] {
  return parseAllDocuments(text).map((doc) => {
    const [error] = doc.errors;
    if (error) throw error;
    return doc.toJS() as Yaml;
  });
}

/** True for a mapping (not a list, scalar or null). */
export function isMap(v: Yaml | undefined): v is YamlMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Follows a path of keys and indexes; undefined when any step is missing. */
export function at(v: Yaml | undefined, ...path: (string | number)[]): Yaml | undefined {
  let cur = v;
  for (const step of path) {
    if (typeof step === "number") cur = Array.isArray(cur) ? cur[step] : undefined;
    else cur = isMap(cur) ? cur[step] : undefined;
  }
  return cur;
}

/** `v` as a mapping, or a failure naming `where`. */
export function map(v: Yaml | undefined, where: string): YamlMap {
  if (!isMap(v)) throw new Error(`${where}: expected a mapping, got ${JSON.stringify(v)}`);
  return v;
}

/** `v` as a list, or a failure naming `where`. */
export function list(v: Yaml | undefined, where: string): Yaml[] {
  if (!Array.isArray(v)) throw new Error(`${where}: expected a list, got ${JSON.stringify(v)}`);
  return v;
}

/** A compose `command`/`test` as argv, whether written as a list or a string. */
export function argv(v: Yaml | undefined): string[] {
  if (Array.isArray(v)) return v.map(String);
  return typeof v === "string" ? v.split(/\s+/).filter(Boolean) : [];
}

/** True when `args` holds `flag` immediately followed by `value`. */
export function hasPair(args: readonly string[], flag: string, value: string): boolean {
  return args.some((a, i) => a === flag && args[i + 1] === value);
}

/** Every object of a kustomization, following `resources` into files and directories. */
export function kustomizeObjects(dir: string): YamlMap[] {
  const k = map(parseYaml(read(join(dir, "kustomization.yaml"))), `${dir}/kustomization.yaml`);
  return list(k.resources ?? [], `${dir} resources`).flatMap((r) => {
    const path = join(dir, String(r));
    if (statSync(join(ROOT, path)).isDirectory()) return kustomizeObjects(path);
    return parseYamlDocuments(read(path)).map((d, i) => map(d, `${path}#${i}`));
  });
}

/** The objects of one kind. */
export const ofKind = (objects: readonly YamlMap[], kind: string): YamlMap[] => objects.filter((o) => o.kind === kind);
/** An object's metadata.name. */
export const nameOf = (o: YamlMap): string => String(at(o, "metadata", "name"));

/** The NATS users `pnpm nats:keys` generates a seed for (scripts/nats-keys.ts). */
export const NATS_USERS: readonly string[] = [...ROLE_NAMES, ...SERVICE_USERS];

/** A compose long-syntax bind mount of a NATS seed (source under .nats/seeds/). */
export const isSeedMount = (v: Yaml): v is YamlMap => isMap(v) && String(v.source).startsWith("./.nats/seeds/");

/** A compose service's bind mounts of NATS seeds. */
export const seedMounts = (svc: Yaml | undefined): YamlMap[] =>
  list(at(svc, "volumes") ?? [], "volumes").filter(isSeedMount);
