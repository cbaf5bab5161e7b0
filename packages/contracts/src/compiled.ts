import { compile, type z } from "zod";

/**
 * Schemas checked on every message and every transition run through zod's compiled parser
 * (`compile`): zod generates one function per schema that checks and builds the parsed value in a
 * single pass, and hands anything it would reject to the schema's own parser. So a compiled
 * schema accepts what the schema accepts, returns what it returns, and rejects with its very
 * errors; it is only faster (SessionState: ~4 µs instead of ~14 µs in a warm loop; a busy
 * coordinator spent ~15% of its CPU validating its commits).
 *
 * Compiling costs once per schema and process, on its first use (~35 ms for SessionState), so
 * a service's start-up pays nothing for schemas it never checks. `AGENTMESH_ZOD_COMPILE=off`
 * keeps every schema on zod's own parser.
 */
const cache = new WeakMap<z.ZodType, z.ZodType>();

function compileEnabled(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  // Only "off" turns it off. Read as the contracts load, before a service parses its config;
  // every service's config lists the variable, so a value other than on/off is refused there,
  // in one line naming it, before any message is checked.
  return env?.AGENTMESH_ZOD_COMPILE !== "off";
}
const enabled = compileEnabled();

/** `schema` with zod's compiled fast path, made on first use and kept for the process. */
export function compiled<S extends z.ZodType>(schema: S): S {
  if (!enabled) return schema;
  let c = cache.get(schema);
  if (c === undefined) {
    c = compile(schema);
    cache.set(schema, c);
  }
  return c as S;
}
