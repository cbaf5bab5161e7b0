import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolRegistry, defineTool, MAX_ATTEMPTS } from "./registry.js";

const echo = (name: string, extra: Partial<Parameters<typeof defineTool>[0]> = {}) =>
  defineTool({
    name,
    description: `echo ${name}`,
    input: z.object({ text: z.string().max(10), n: z.number().int().optional() }),
    output: z.object({ text: z.string() }),
    allowedRoles: ["researcher"],
    async execute(input: { text: string }) {
      return { text: input.text };
    },
    ...extra,
  });

describe("tool registry", () => {
  it("lists tools for planners with name, description and the JSON Schema of the input", () => {
    const reg = createToolRegistry([echo("b_tool"), echo("a_tool", { allowedRoles: ["expert"] })]);
    const all = reg.list();
    expect(all.map((t) => t.name)).toEqual(["a_tool", "b_tool"]);
    const schema = all[1]?.inputSchema as {
      type: string;
      properties: Record<string, { type: string }>;
      required: string[];
    };
    expect(schema.type).toBe("object");
    expect(schema.properties.text?.type).toBe("string");
    expect(schema.required).toEqual(["text"]);
    expect(all[1]?.timeoutMs).toBe(5000);
  });

  it("filters discovery by role, so a role only sees what it may call", () => {
    const reg = createToolRegistry([echo("b_tool"), echo("a_tool", { allowedRoles: ["expert"] })]);
    expect(reg.list({ role: "expert" }).map((t) => t.name)).toEqual(["a_tool"]);
    expect(reg.list({ role: "critic" })).toEqual([]);
  });

  it("refuses duplicates, bad names, unknown roles, bad retry policies and empty descriptions", () => {
    const reg = createToolRegistry([echo("one")]);
    expect(() => reg.register(echo("one"))).toThrow(/already registered/);
    expect(() => reg.register(echo("Bad-Name"))).toThrow(/must match/);
    expect(() => reg.register(echo("x", { allowedRoles: ["janitor" as never] }))).toThrow(/unknown role/);
    expect(() => reg.register(echo("y", { retry: { backoffCoefficient: 0.5 } }))).toThrow(/backoffCoefficient/);
    expect(() => reg.register(echo("z", { retry: { nonRetryable: ["nope" as never] } }))).toThrow(/unknown code/);
    expect(() => reg.register(echo("w", { description: "  " }))).toThrow(/description/);
    expect(() => reg.register(echo("v", { timeoutMs: 0 }))).toThrow(/timeoutMs/);
  });

  it("takes MCP tools as mcp.<server>.<tool> (the tool keeps its server's spelling) with their own JSON Schema", () => {
    const own = { type: "object", properties: { q: { type: "string" } } };
    const reg = createToolRegistry([echo("mcp.bio.search-Articles_2", { inputJsonSchema: own })]);
    expect(reg.list()[0]?.inputSchema).toEqual(own);
    for (const bad of ["mcp.Bio.x", "mcp.bio.", "mcp.bio.a.b", "mcp..x", `mcp.bio.${"x".repeat(51)}`, "other.bio.x"]) {
      expect(() => reg.register(echo(bad))).toThrow(/must match/);
    }
  });

  it("clamps attempts to 3 whatever a tool asks, and freezes what it registered", () => {
    const reg = createToolRegistry([echo("greedy", { retry: { maxAttempts: 10 } })], { defaultTimeoutMs: 4000 });
    const t = reg.get("greedy");
    expect(t?.retry.maxAttempts).toBe(MAX_ATTEMPTS);
    expect(t?.timeoutMs).toBe(4000);
    expect(Object.isFrozen(t)).toBe(true);
    expect(reg.get("missing")).toBeUndefined();
  });
});
