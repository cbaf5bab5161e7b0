import { formatZodError } from "@agentmesh/contracts";
import { z } from "zod";

type JsonSchema = Record<string, unknown>;

// Keywords that OpenAI's strict mode rejects ("'maxLength' is not permitted") and that some
// OpenAI-compatible servers choke on. They are dropped from what is sent; zod still enforces
// them when the reply is validated.
const UNSUPPORTED_KEYWORDS = [
  "$schema",
  "minLength",
  "maxLength",
  "patternProperties",
  "propertyNames",
  "unevaluatedProperties",
  "minProperties",
  "maxProperties",
  "default",
];

const isSchema = (v: unknown): v is JsonSchema => typeof v === "object" && v !== null && !Array.isArray(v);

function isNullable(s: JsonSchema): boolean {
  if (s.type === "null" || (Array.isArray(s.type) && s.type.includes("null"))) return true;
  return Array.isArray(s.anyOf) && s.anyOf.some((x) => isSchema(x) && isNullable(x));
}

function strictify(s: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(s)) {
    if (UNSUPPORTED_KEYWORDS.includes(k)) continue;
    if (k === "properties" && isSchema(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, isSchema(p) ? strictify(p) : p]));
    } else if ((k === "anyOf" || k === "oneOf" || k === "allOf" || k === "prefixItems") && Array.isArray(v)) {
      out[k] = v.map((x) => (isSchema(x) ? strictify(x) : x));
    } else if ((k === "$defs" || k === "definitions") && isSchema(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, d]) => [name, isSchema(d) ? strictify(d) : d]));
    } else if ((k === "items" || k === "additionalProperties" || k === "not") && isSchema(v)) {
      out[k] = strictify(v);
    } else {
      out[k] = v;
    }
  }
  if (isSchema(out.properties)) {
    // Strict mode wants every property listed as required; a property that was optional becomes
    // nullable instead, and `normaliseNulls` turns the model's null back into "absent".
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const props = out.properties;
    for (const name of Object.keys(props)) {
      const p = props[name];
      if (!required.has(name) && isSchema(p) && !isNullable(p)) props[name] = { anyOf: [p, { type: "null" }] };
    }
    out.required = Object.keys(props);
    out.additionalProperties = false;
  }
  return out;
}

const strictCache = new WeakMap<z.ZodType, JsonSchema>();

/**
 * A zod schema as a strict JSON schema for `response_format: json_schema`: every property
 * required, optional ones nullable, `additionalProperties: false` on every object.
 */
export function toStrictJsonSchema(schema: z.ZodType): JsonSchema {
  const cached = strictCache.get(schema);
  if (cached) return cached;
  // "input": the model produces what our schema parses, so describe the parse input side.
  const raw = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as JsonSchema;
  const strict = strictify(raw);
  strictCache.set(schema, strict);
  return strict;
}

/** A schema name as OpenAI accepts it: [a-zA-Z0-9_-], at most 64 characters. */
export function schemaNameFor(name: string): string {
  const cleaned = name.replace(/[^a-zA-Z0-9_-]+/g, "_").slice(0, 64);
  return cleaned.length > 0 ? cleaned : "output";
}

/**
 * Undoes the strict-mode encoding of optional properties: where the zod schema says a property
 * is optional but not nullable, a `null` from the model means "absent". Walks objects, arrays
 * and the optional/nullable/default wrappers; anything else is left as it is.
 */
export function normaliseNulls(schema: z.ZodType, value: unknown): unknown {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable || schema instanceof z.ZodDefault) {
    return value === null || value === undefined ? value : normaliseNulls(schema.unwrap() as z.ZodType, value);
  }
  if (schema instanceof z.ZodArray && Array.isArray(value)) {
    return value.map((v) => normaliseNulls(schema.element as z.ZodType, v));
  }
  if (schema instanceof z.ZodObject && isSchema(value)) {
    const shape = schema.shape as Record<string, z.ZodType>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const field = Object.hasOwn(shape, k) ? shape[k] : undefined;
      if (!field) {
        out[k] = v;
        continue;
      }
      if (v === null && field.safeParse(undefined).success && !field.safeParse(null).success) continue;
      out[k] = normaliseNulls(field, v);
    }
    return out;
  }
  return value;
}

/** The outcome of reading a model's reply as structured output. */
export type ParsedReply<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

/** Extracts the JSON object from a reply (tolerating a markdown fence or prose around it). */
function extractJson(content: string): string {
  const text = content.trim();
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  if (fenced?.[1] !== undefined) return fenced[1].trim();
  if (text.startsWith("{") || text.startsWith("[")) return text;
  // Prompt-mode models sometimes wrap the object in a sentence; take the outermost braces.
  const first = text.indexOf("{");
  const last = text.lastIndexOf("}");
  return first >= 0 && last > first ? text.slice(first, last + 1) : text;
}

/** Parses and validates a reply; a problem is phrased for the model to fix on its retry. */
export function parseReply<T>(schema: z.ZodType<T>, content: string): ParsedReply<T> {
  let json: unknown;
  try {
    json = JSON.parse(extractJson(content));
  } catch (err) {
    return { ok: false, problem: `The reply is not valid JSON (${(err as Error).message}).` };
  }
  const result = schema.safeParse(normaliseNulls(schema, json));
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problem: `The reply does not match the schema: ${formatZodError(result.error, 3900)}` };
}

/** The instruction that describes the schema in the prompt, for servers without schema support. */
export function schemaInstruction(schema: z.ZodType): string {
  return [
    "Reply with one JSON object and nothing else: no prose, no markdown fence.",
    "It must match this JSON schema:",
    JSON.stringify(toStrictJsonSchema(schema)),
  ].join("\n");
}
