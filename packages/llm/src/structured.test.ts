import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ROLES } from "@agentmesh/contracts";
import { normaliseNulls, parseReply, schemaNameFor, toStrictJsonSchema } from "./structured.js";

describe("toStrictJsonSchema", () => {
  const schema = z.object({
    name: z.string().max(10),
    note: z.string().optional(),
    maybe: z.number().nullable(),
    items: z.array(z.object({ id: z.number(), tag: z.string().optional() })).max(3),
  });

  it("requires every property, makes optional ones nullable and closes every object", () => {
    const s = toStrictJsonSchema(schema);
    expect(s).toMatchObject({
      type: "object",
      required: ["name", "note", "maybe", "items"],
      additionalProperties: false,
      properties: {
        note: { anyOf: [{ type: "string" }, { type: "null" }] },
        items: { maxItems: 3, items: { required: ["id", "tag"], additionalProperties: false } },
      },
    });
    // Already nullable: not wrapped twice.
    expect(JSON.stringify((s.properties as Record<string, unknown>).maybe).match(/"null"/g)).toHaveLength(1);
  });

  it("drops keywords strict mode rejects (zod still enforces them)", () => {
    const text = JSON.stringify(toStrictJsonSchema(schema));
    expect(text).not.toMatch(/maxLength|minLength|\$schema/);
  });

  it("makes every object-shaped contracts response schema strict", () => {
    // A union response (an agent's action) is never sent as a schema: its op's model writes a flat
    // draft or text, which roles.test checks for every op whose model writes the response itself.
    for (const ops of Object.values(ROLES)) {
      for (const def of Object.values(ops as Record<string, { response: z.ZodType }>)) {
        const s = toStrictJsonSchema(def.response) as {
          type?: string;
          required: string[];
          properties: object;
          additionalProperties: boolean;
        };
        if (s.type !== "object") continue;
        expect(s.required.sort()).toEqual(Object.keys(s.properties).sort());
        expect(s.additionalProperties).toBe(false);
      }
    }
  });

  it("cleans schema names", () => {
    expect(schemaNameFor("critic.review plan")).toBe("critic_review_plan");
    expect(schemaNameFor("")).toBe("output");
  });
});

describe("reading replies", () => {
  const schema = z.object({
    a: z.number(),
    b: z.string().optional(),
    c: z.string().nullable(),
    d: z.array(z.object({ e: z.number().optional() })),
  });

  it("turns strict-mode nulls back into absent optionals, keeping real nullables", () => {
    expect(normaliseNulls(schema, { a: 1, b: null, c: null, d: [{ e: null }] })).toEqual({ a: 1, c: null, d: [{}] });
  });

  it("accepts a fenced or wrapped JSON object", () => {
    expect(parseReply(schema, '```json\n{"a":1,"c":"x","d":[]}\n```')).toEqual({
      ok: true,
      value: { a: 1, c: "x", d: [] },
    });
    expect(parseReply(schema, 'Here it is: {"a":1,"c":null,"d":[]} hope that helps')).toMatchObject({ ok: true });
  });

  it("phrases problems for the model to fix", () => {
    expect(parseReply(schema, "not json")).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/not valid JSON/),
    });
    expect(parseReply(schema, '{"a":"1","c":null,"d":[]}')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/does not match the schema[\s\S]*a/),
    });
  });
});
