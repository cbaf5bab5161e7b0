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
 * a service's start-up pays nothing for schemas it never checks. It is on unless
 * `setCompiledParsing(false)` turns it off; contracts read no environment: service-kit's env
 * config applies `AGENTMESH_ZOD_COMPILE` when a process parses its config.
 */
let cache = new WeakMap<z.ZodType, z.ZodType>();
let enabled = true;

/**
 * Turns compiled parsing on (the default) or off for the whole process, and forgets every schema
 * compiled so far. Set it before the process checks its first message.
 */
export function setCompiledParsing(on: boolean): void {
  enabled = on;
  cache = new WeakMap();
}

/** `schema` with zod's compiled fast path (made on first use and kept), or `schema` itself when compiled parsing is off. */
export function compiled<S extends z.ZodType>(schema: S): S {
  if (!enabled) return schema;
  let c = cache.get(schema);
  if (c === undefined) {
    c = compile(schema);
    cache.set(schema, c);
  }
  return c as S;
}
