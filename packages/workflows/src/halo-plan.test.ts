import { describe, expect, it } from "vitest";
import { Capability } from "@agentmesh/contracts";
import { FALLBACK_PLAN, overridePlan, parseCapabilityPlan } from "./halo-plan.js";

const ALL = Capability.options;

describe("halo planner output", () => {
  it("keeps the planner's order", () => {
    expect(parseCapabilityPlan('{"capabilities":["graph","rag"]}', ALL)).toEqual({
      capabilities: ["graph", "rag"],
      fallback: null,
    });
    expect(parseCapabilityPlan('{"capabilities":["rag","graph"]}', ALL).capabilities).toEqual(["rag", "graph"]);
  });

  it("de-duplicates, keeping each tag where it first appears", () => {
    expect(parseCapabilityPlan('{"capabilities":["web","graph","web","biomcp","graph"]}', ALL).capabilities).toEqual([
      "web",
      "graph",
      "biomcp",
    ]);
  });

  it("falls back to chitchat on output that is not JSON", () => {
    const out = parseCapabilityPlan("not-json", ALL);
    expect(out.capabilities).toEqual(["chitchat"]);
    expect(out.fallback).toMatch(/not JSON/);
  });

  it("falls back to chitchat on an unknown tag, even beside known ones (one unknown tag rejects the whole plan)", () => {
    expect(parseCapabilityPlan('{"capabilities":["unknown"]}', ALL).capabilities).toEqual(["chitchat"]);
    const mixed = parseCapabilityPlan('{"capabilities":["graph","unknown"]}', ALL);
    expect(mixed.capabilities).toEqual(["chitchat"]);
    expect(mixed.fallback).toMatch(/not a capability plan/);
  });

  it("falls back to chitchat on an empty list, a wrong shape or empty output", () => {
    for (const raw of [
      '{"capabilities":[]}',
      '{"plan":["graph"]}',
      '["graph"]',
      '{"capabilities":"graph"}',
      "",
      "   ",
    ]) {
      const out = parseCapabilityPlan(raw, ALL);
      expect(out.capabilities, raw).toEqual(FALLBACK_PLAN);
      expect(out.fallback, raw).not.toBeNull();
    }
  });

  it("takes the JSON value as well as its text", () => {
    expect(parseCapabilityPlan({ capabilities: ["biomcp", "rag"] }, ALL).capabilities).toEqual(["biomcp", "rag"]);
    expect(parseCapabilityPlan({ capabilities: ["nope"] }, ALL).capabilities).toEqual(["chitchat"]);
  });

  it("leaves out what this deployment cannot serve, and falls back when nothing is left", () => {
    expect(parseCapabilityPlan('{"capabilities":["web","graph","rag"]}', ["graph"]).capabilities).toEqual(["graph"]);
    const none = parseCapabilityPlan('{"capabilities":["web","biomcp"]}', ["graph", "rag"]);
    expect(none).toEqual({ capabilities: ["chitchat"], fallback: "this deployment serves none of web, biomcp" });
  });

  it("treats chitchat as always servable", () => {
    expect(parseCapabilityPlan('{"capabilities":["chitchat","graph"]}', ["graph"]).capabilities).toEqual([
      "chitchat",
      "graph",
    ]);
    expect(parseCapabilityPlan('{"capabilities":["chitchat"]}', ["rag"])).toEqual({
      capabilities: ["chitchat"],
      fallback: null,
    });
  });
});

describe("halo plan override (options.capabilities)", () => {
  it("is used as given, de-duplicated in order", () => {
    expect(overridePlan(["graph", "rag"], ALL)).toEqual({ capabilities: ["graph", "rag"], fallback: null });
    expect(overridePlan(["rag", "rag", "graph"], ALL).capabilities).toEqual(["rag", "graph"]);
  });

  it("falls back to chitchat when empty", () => {
    expect(overridePlan([], ALL)).toEqual({ capabilities: ["chitchat"], fallback: "the plan is empty" });
  });

  it("never selects a capability the deployment cannot serve", () => {
    expect(overridePlan(["llama_mcp", "graph"], ["graph", "rag"]).capabilities).toEqual(["graph"]);
    expect(overridePlan(["llama_mcp"], ["graph"])).toEqual({
      capabilities: ["chitchat"],
      fallback: "this deployment serves none of llama_mcp",
    });
  });
});
