import fc from "fast-check";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import {
  CancelNotice,
  InboxInput,
  ROLES,
  SessionEvent,
  SubmitRequest,
  TaskEnvelope,
  TaskOutcome,
} from "@agentmesh/contracts";
import { arbitraryOf } from "./arbitrary.js";
import { FUZZ_HINTS } from "./hints.js";
import { DEEP_LEVELS, fuzzInputsArb, mutatedArb, pathsOf, sampleInputs, setAt } from "./mutate.js";

const wire: Record<string, z.ZodType> = {
  SubmitRequest,
  InboxInput,
  TaskEnvelope,
  TaskOutcome,
  CancelNotice,
  SessionEvent,
};
for (const [role, ops] of Object.entries(ROLES)) {
  for (const [op, d] of Object.entries(ops as Record<string, { request: z.ZodType; response: z.ZodType }>)) {
    wire[`${role}.${op} request`] = d.request;
    wire[`${role}.${op} response`] = d.response;
  }
}

describe("arbitraryOf (zod 4 → fast-check)", () => {
  it.each(Object.keys(wire))("%s: every generated value passes its schema, and the values differ", (name) => {
    const schema = wire[name]!;
    const values = fc.sample(arbitraryOf(schema, FUZZ_HINTS), { numRuns: 40, seed: 7 });
    for (const v of values) expect(schema.safeParse(v).success).toBe(true);
    expect(new Set(values.map((v) => JSON.stringify(v))).size).toBeGreaterThan(10);
  });

  it("covers every option of a discriminated union", () => {
    const kinds = new Set(fc.sample(arbitraryOf(InboxInput, FUZZ_HINTS), { numRuns: 200, seed: 1 }).map((i) => i.kind));
    expect([...kinds].sort()).toEqual(["cancel", "result", "start", "timer", "user_reply"]);
  });

  it("names a zod type it cannot generate instead of guessing", () => {
    expect(() => arbitraryOf(z.bigint())).toThrow(/zod type "bigint" is not supported/);
  });
});

describe("mutations", () => {
  it("setAt replaces or removes one field and leaves the original alone", () => {
    const v = { a: { b: [1, 2, 3] }, c: "x" };
    expect(setAt(v, ["a", "b", 1], "y")).toEqual({ a: { b: [1, "y", 3] }, c: "x" });
    expect(setAt(v, ["c"], undefined)).toEqual({ a: { b: [1, 2, 3] } });
    expect(v).toEqual({ a: { b: [1, 2, 3] }, c: "x" });
    expect(pathsOf(v)).toEqual([["a"], ["a", "b"], ["a", "b", 0], ["a", "b", 1], ["a", "b", 2], ["c"]]);
  });

  it("most valid-then-mutated values no longer pass the schema", () => {
    const inputs = fc.sample(mutatedArb(arbitraryOf(CancelNotice, FUZZ_HINTS)), { numRuns: 150, seed: 3 });
    const rejected = inputs.filter((i) => {
      try {
        return !CancelNotice.safeParse(JSON.parse(new TextDecoder().decode(i.bytes))).success;
      } catch {
        return true;
      }
    });
    expect(rejected.length / inputs.length).toBeGreaterThan(0.5);
  });

  it(`the hostile kinds include bad UTF-8, ${DEEP_LEVELS}-level nesting and bodies over the byte limit`, () => {
    const inputs = sampleInputs(fuzzInputsArb(arbitraryOf(CancelNotice, FUZZ_HINTS)), 1000, 11);
    const kinds = new Set(inputs.map((i) => i.kind));
    for (const k of [
      "valid",
      "mutated",
      "deep_nesting",
      "huge_near_limit",
      "huge_over_limit",
      "bad_utf8",
      "wrong_top_type",
      "random_json",
      "random_bytes",
      "not_json",
    ]) {
      expect(kinds.has(k as never), k).toBe(true);
    }
    const bad = inputs.filter((i) => i.kind === "bad_utf8");
    for (const b of bad) expect(() => new TextDecoder("utf-8", { fatal: true }).decode(b.bytes)).toThrow();
  });
});
