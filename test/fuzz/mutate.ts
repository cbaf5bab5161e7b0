import fc from "fast-check";
import { LIMITS } from "@agentmesh/contracts";

/**
 * Hostile wire bodies for the fuzz test: a valid value with one field mutated (so it reaches the
 * handlers), and raw inputs no schema would produce (bad UTF-8, deep nesting, oversized, not JSON).
 * Every input is bytes plus the kind that made it, so the test can count per kind.
 */

export type FuzzKind =
  | "valid"
  | "mutated"
  | "deep_nesting"
  | "huge_near_limit"
  | "huge_over_limit"
  | "bad_utf8"
  | "wrong_top_type"
  | "random_json"
  | "random_bytes"
  | "not_json";

export interface FuzzInput {
  readonly kind: FuzzKind;
  /** What was mutated, for failure messages. */
  readonly note: string;
  readonly bytes: Uint8Array;
}

type Path = ReadonlyArray<string | number>;
const enc = new TextEncoder();

/** Levels of the deep-nesting input: the depth of the poison result. */
export const DEEP_LEVELS = 100_000;
const DEEP_TEXT = "[".repeat(DEEP_LEVELS) + "]".repeat(DEEP_LEVELS);
/** A placeholder swapped for raw JSON text after stringify: lets a field hold what JSON.stringify cannot write. */
const RAW = "\u0000raw\u0000";

/** Every path to a value inside `v` (not the root), objects' keys and arrays' indexes alike. */
export function pathsOf(v: unknown, at: Path = [], out: Path[] = []): Path[] {
  if (Array.isArray(v))
    v.forEach((x, i) => {
      out.push([...at, i]);
      pathsOf(x, [...at, i], out);
    });
  else if (v !== null && typeof v === "object")
    for (const [k, x] of Object.entries(v)) {
      out.push([...at, k]);
      pathsOf(x, [...at, k], out);
    }
  return out;
}

/** A copy of `v` with the value at `path` replaced (or removed, for `undefined`). */
export function setAt(v: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string | number, ...Array<string | number>];
  if (Array.isArray(v)) {
    const copy = [...v];
    if (value === undefined && rest.length === 0) copy.splice(head as number, 1);
    else copy[head as number] = setAt(copy[head as number], rest, value);
    return copy;
  }
  const copy = { ...(v as Record<string, unknown>) };
  if (value === undefined && rest.length === 0) delete copy[head];
  else copy[head] = setAt(copy[head], rest, value);
  return copy;
}

/** Replacements for one field: wrong types, edge numbers, hostile text, and raw JSON tokens. */
const replacements: ReadonlyArray<{ note: string; value: unknown; raw?: string }> = [
  { note: "removed", value: undefined },
  { note: "null", value: null },
  { note: "true", value: true },
  { note: "zero", value: 0 },
  { note: "negative", value: -1 },
  { note: "fraction", value: 0.5 },
  { note: "huge number", value: 1e308 },
  { note: "unsafe integer", value: 2 ** 53 + 2 },
  { note: "infinity token", value: RAW, raw: "1e999" },
  { note: "empty string", value: "" },
  { note: "text", value: "x" },
  { note: "number as text", value: "1" },
  { note: "control characters", value: "\u0000\u001b[31m\u0007" },
  { note: "lone surrogate", value: "\ud800" },
  { note: "bidi override", value: "\u202eevil" },
  { note: "empty list", value: [] },
  { note: "empty object", value: {} },
  {
    note: "prototype key",
    value: RAW,
    raw: '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
  },
  { note: "wide list", value: Array.from({ length: 200 }, (_, i) => i) },
  { note: "long text", value: "y".repeat(LIMITS.maxTextChars + 1) },
  { note: "nested 70 levels", value: RAW, raw: "[".repeat(70) + "]".repeat(70) },
  { note: `nested ${DEEP_LEVELS} levels`, value: RAW, raw: DEEP_TEXT },
];

function serialise(v: unknown, raw?: string): string {
  const text = JSON.stringify(v);
  return raw === undefined ? text : text.replace(JSON.stringify(RAW), raw);
}

/** A valid value with exactly one field replaced, removed, or one unknown field added. */
export function mutatedArb(valid: fc.Arbitrary<unknown>): fc.Arbitrary<FuzzInput> {
  return valid
    .chain((v) => {
      const paths = pathsOf(v);
      return fc.tuple(
        fc.constant(v),
        paths.length ? fc.constantFrom(...paths) : fc.constant([] as Path),
        fc.nat(replacements.length),
        fc.boolean(),
      );
    })
    .map(([v, path, i, extra]) => {
      // one extra unknown field beside the path's parent, or a replacement at the path
      if (i === replacements.length || (extra && path.length === 0)) {
        const parent = path.slice(0, -1);
        const target = parent.reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], v);
        const withExtra =
          target !== null && typeof target === "object" && !Array.isArray(target)
            ? setAt(v, [...parent, "unexpected_field"], "z")
            : setAt(v, path, "z");
        return {
          kind: "mutated" as const,
          note: `unknown field at /${parent.join("/")}`,
          bytes: enc.encode(JSON.stringify(withExtra)),
        };
      }
      const r = replacements[i]!;
      return {
        kind: "mutated" as const,
        note: `/${path.join("/")} ${r.note}`,
        bytes: enc.encode(serialise(setAt(v, path, r.value), r.raw)),
      };
    });
}

/** A valid value whose field at `path` nests `DEEP_LEVELS` levels (where `z.unknown()` would take it). */
export function deepAtArb(valid: fc.Arbitrary<unknown>, path: Path): fc.Arbitrary<FuzzInput> {
  return valid.map((v) => ({
    kind: "deep_nesting" as const,
    note: `/${path.join("/")} nested ${DEEP_LEVELS} levels`,
    bytes: enc.encode(serialise(setAt(v, path, RAW), DEEP_TEXT)),
  }));
}

/** Valid JSON text with invalid UTF-8 bytes spliced into one of its strings. */
function badUtf8(v: unknown, at: number, bytes: readonly number[]): Uint8Array {
  const text = enc.encode(JSON.stringify(v));
  // splice right after an opening quote so the bytes land inside a string value or key
  const quotes = text.reduce<number[]>((acc, b, i) => (b === 0x22 ? [...acc, i] : acc), []);
  const pos = quotes.length ? quotes[at % quotes.length]! + 1 : 0;
  return Uint8Array.from([...text.subarray(0, pos), ...bytes, ...text.subarray(pos)]);
}

const BAD_UTF8_SEQUENCES = [
  [0xff],
  [0xc3, 0x28],
  [0xe2, 0x28, 0xa1],
  [0xf0, 0x90, 0x28, 0xbc],
  [0xed, 0xa0, 0x80],
  [0xc0, 0xaf],
  [0x80],
];

/** A valid value padded with one long string field so the body is `targetBytes` long. */
function padded(v: unknown, targetBytes: number): Uint8Array {
  const base = JSON.stringify(setAt(v, ["padding"], ""));
  return enc.encode(base.replace('"padding":""', `"padding":"${"p".repeat(Math.max(0, targetBytes - base.length))}"`));
}

/** Every kind of hostile input built from valid values of one schema, in the given shares (weights sum to 100). */
export function fuzzInputsArb(valid: fc.Arbitrary<unknown>): fc.Arbitrary<FuzzInput> {
  const deep = (v: unknown) => setAt(v, ["deep"], RAW);
  return fc.oneof(
    {
      weight: 10,
      arbitrary: valid.map((v) => ({ kind: "valid" as const, note: "valid", bytes: enc.encode(JSON.stringify(v)) })),
    },
    { weight: 40, arbitrary: mutatedArb(valid) },
    {
      weight: 2,
      arbitrary: valid.map((v) => ({
        kind: "deep_nesting" as const,
        note: `extra field nested ${DEEP_LEVELS} levels`,
        bytes: enc.encode(serialise(deep(v), DEEP_TEXT)),
      })),
    },
    {
      weight: 1,
      arbitrary: valid.map((v) => ({
        kind: "huge_near_limit" as const,
        note: "one byte under the limit",
        bytes: padded(v, LIMITS.maxMessageBytes - 1),
      })),
    },
    {
      weight: 1,
      arbitrary: valid.map((v) => ({
        kind: "huge_over_limit" as const,
        note: "one byte over the limit",
        bytes: padded(v, LIMITS.maxMessageBytes + 1),
      })),
    },
    {
      weight: 12,
      arbitrary: fc.tuple(valid, fc.nat(), fc.constantFrom(...BAD_UTF8_SEQUENCES)).map(([v, at, b]) => ({
        kind: "bad_utf8" as const,
        note: `bytes ${b.map((x) => x.toString(16)).join(" ")}`,
        bytes: badUtf8(v, at, b),
      })),
    },
    {
      weight: 6,
      arbitrary: fc
        .constantFrom("null", "true", "1", '"text"', "[]", '[{"v":1}]', "{}", '{"v":2}', '{"v":"1"}')
        .map((t) => ({ kind: "wrong_top_type" as const, note: t, bytes: enc.encode(t) })),
    },
    {
      weight: 16,
      arbitrary: fc.jsonValue({ maxDepth: 3 }).map((j) => ({
        kind: "random_json" as const,
        note: "random json",
        bytes: enc.encode(
          JSON.stringify({ v: 1, ...(typeof j === "object" && j !== null && !Array.isArray(j) ? j : { value: j }) }),
        ),
      })),
    },
    {
      weight: 6,
      arbitrary: fc
        .uint8Array({ minLength: 0, maxLength: 64 })
        .map((b) => ({ kind: "random_bytes" as const, note: "random bytes", bytes: b })),
    },
    {
      weight: 6,
      arbitrary: valid.chain((v) => {
        const t = JSON.stringify(v);
        return fc.nat(t.length).map((n) => ({
          kind: "not_json" as const,
          note: "truncated",
          bytes: enc.encode(t.slice(0, n) + (n % 2 ? "" : "}}]")),
        }));
      }),
    },
  );
}

/** `n` inputs from `arb`, reproducible from the random `seed`. */
export function sampleInputs(arb: fc.Arbitrary<FuzzInput>, n: number, seed: number): FuzzInput[] {
  return fc.sample(arb, { numRuns: n, seed });
}

/** Count of inputs per kind. */
export function countKinds(inputs: readonly FuzzInput[]): Partial<Record<FuzzKind, number>> {
  const out: Partial<Record<FuzzKind, number>> = {};
  for (const i of inputs) out[i.kind] = (out[i.kind] ?? 0) + 1;
  return out;
}
