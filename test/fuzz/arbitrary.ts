import fc from "fast-check";
import type { z } from "zod";

/**
 * fast-check arbitraries generated from our zod 4 schemas, for fuzzing the wire. Values are kept
 * small (short strings, few list items) so thousands of them cost little; every generated value
 * is checked against its schema, so refinements are honoured too.
 */

interface Def {
  readonly type: string;
  readonly checks?: ReadonlyArray<{ readonly _zod: { readonly def: CheckDef } }>;
  readonly [k: string]: unknown;
}
interface CheckDef {
  readonly check: string;
  readonly format?: string;
  readonly pattern?: RegExp;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly value?: number;
  readonly inclusive?: boolean;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;
const checksOf = (d: Def): CheckDef[] => (d.checks ?? []).map((c) => c._zod.def);

/** Longest string and list the generator makes on its own (a schema minimum above it wins). */
const MAX_GEN_CHARS = 24;
const MAX_GEN_ITEMS = 3;

function lengthBounds(d: Def, cap: number): { min: number; max: number } {
  let min = 0;
  let max = Number.POSITIVE_INFINITY;
  for (const c of checksOf(d)) {
    if (c.check === "min_length" && c.minimum !== undefined) min = Math.max(min, c.minimum);
    if (c.check === "max_length" && c.maximum !== undefined) max = Math.min(max, c.maximum);
    if (c.check === "length_equals" && c.value !== undefined) min = max = c.value;
  }
  return { min, max: Math.max(min, Math.min(max, min + cap)) };
}

function stringArb(d: Def): fc.Arbitrary<string> {
  // fc.webUrl() costs seconds to set up; a plain URL shape is enough for a wire schema
  if (d.format === "url")
    return fc
      .tuple(
        fc.constantFrom("http", "https"),
        fc.stringMatching(/^[a-z]{1,12}$/),
        fc.stringMatching(/^[a-z0-9]{0,12}$/),
      )
      .map(([s, h, p]) => `${s}://${h}.example/${p}`);
  const regex = checksOf(d).find((c) => c.check === "string_format" && c.pattern)?.pattern;
  // a pattern sets its own lengths; explicit length checks beside it are left to the final schema check
  if (regex) return fc.stringMatching(regex);
  const { min, max } = lengthBounds(d, MAX_GEN_CHARS);
  return fc.string({ minLength: min, maxLength: max, unit: "grapheme" });
}

function numberArb(d: Def): fc.Arbitrary<number> {
  let lo = -1e6;
  let hi = 1e6;
  let loOpen = false;
  let hiOpen = false;
  let int = false;
  for (const c of checksOf(d)) {
    if (c.check === "number_format" && (c.format === "safeint" || c.format === "int32" || c.format === "uint32"))
      int = true;
    if (c.check === "greater_than" && c.value !== undefined) {
      lo = c.value;
      loOpen = !c.inclusive;
    }
    if (c.check === "less_than" && c.value !== undefined) {
      hi = c.value;
      hiOpen = !c.inclusive;
    }
  }
  if (int)
    return fc.integer({
      min: Math.ceil(loOpen ? lo + 1 : lo),
      max: Math.min(Math.floor(hiOpen ? hi - 1 : hi), Math.ceil(lo) + 1e6),
    });
  return fc.double({
    min: lo,
    max: Math.min(hi, lo + 1e6),
    minExcluded: loOpen,
    maxExcluded: hiOpen,
    noNaN: true,
    noDefaultInfinity: true,
  });
}

/** Anything JSON, small: what a schema's `unknown` field gets. */
const smallJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2, depthSize: "small" });

/** Values a schema may take that random generation would almost never hit (e.g. a plan must end with `summarize`). */
export type Hints = ReadonlyMap<z.ZodType, fc.Arbitrary<unknown>>;

function build(s: z.ZodType, hints: Hints): fc.Arbitrary<unknown> {
  const hinted = hints.get(s);
  const arb = hinted ? fc.oneof(hinted, structural(s, hints)) : structural(s, hints);
  // a refinement is checked where it is declared, so one failing leaf does not discard the whole value
  return checksOf(defOf(s)).some((c) => c.check === "custom") ? arb.filter((v) => s.safeParse(v).success) : arb;
}

function structural(s: z.ZodType, hints: Hints): fc.Arbitrary<unknown> {
  const d = defOf(s);
  const sub = (x: unknown) => build(x as z.ZodType, hints);
  switch (d.type) {
    case "string":
      return stringArb(d);
    case "number":
      return numberArb(d);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "unknown":
    case "any":
      return smallJson;
    case "literal":
      return fc.constantFrom(...(d.values as unknown[]));
    case "enum":
      return fc.constantFrom(...Object.values(d.entries as Record<string, string | number>));
    case "nullable":
      return fc.option(sub(d.innerType), { nil: null, freq: 3 });
    case "optional":
      return fc.option(sub(d.innerType), { nil: undefined, freq: 3 });
    case "default":
      return fc.option(sub(d.innerType), { nil: undefined, freq: 3 });
    case "array": {
      const { min, max } = lengthBounds(d, MAX_GEN_ITEMS);
      return fc.array(sub(d.element), { minLength: min, maxLength: max });
    }
    case "object": {
      const shape = d.shape as Record<string, z.ZodType>;
      const fields = Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, sub(v)]));
      // an optional field is left out rather than set to undefined: JSON has no undefined
      return fc.record(fields).map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
    }
    case "union":
      return fc.oneof(...(d.options as z.ZodType[]).map(sub));
    case "record":
      return fc.dictionary(sub(d.keyType) as fc.Arbitrary<string>, sub(d.valueType), { maxKeys: MAX_GEN_ITEMS });
    case "pipe":
      return sub(d.in);
    default:
      throw new Error(`arbitraryOf: zod type "${d.type}" is not supported yet; add it to test/fuzz/arbitrary.ts`);
  }
}

/** Valid values of `schema`: generated from its structure, kept only when the schema accepts them. */
export function arbitraryOf<S extends z.ZodType>(schema: S, hints: Hints = new Map()): fc.Arbitrary<z.input<S>> {
  return build(schema, hints).filter((v) => schema.safeParse(v).success) as fc.Arbitrary<z.input<S>>;
}
