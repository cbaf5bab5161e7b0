import { describe, expect, it } from "vitest";
import { RoutingDecision, SupervisorAgent } from "@agentmesh/contracts";
import { routingDecision } from "./supervisor-routing.js";

describe("routing", () => {
  it("takes an explicit mode without the model: confidence 1, a reason that says so", () => {
    for (const mode of SupervisorAgent.options) {
      const d = routingDecision({ mode });
      expect(d).toEqual({
        agent: mode,
        confidence: 1,
        reason: `explicit mode "${mode}" (the router was not asked)`,
        is_low_confidence: false,
      });
      expect(RoutingDecision.safeParse(d).success).toBe(true);
    }
  });

  it("keeps the router's choice and reason", () => {
    expect(routingDecision({ routed: { agent: "data", confidence: 0.92, reason: "a CSV to chart" } })).toEqual({
      agent: "data",
      confidence: 0.92,
      reason: "a CSV to chart",
      is_low_confidence: false,
    });
  });

  it("flags a confidence under 0.5 as low, and 0.5 itself not", () => {
    const at = (confidence: number) => routingDecision({ routed: { agent: "research", confidence, reason: "r" } });
    expect(at(0.49).is_low_confidence).toBe(true);
    expect(at(0).is_low_confidence).toBe(true);
    expect(at(0.5).is_low_confidence).toBe(false);
    expect(at(1).is_low_confidence).toBe(false);
    for (const c of [0, 0.25, 0.4999, 0.5, 0.75, 1])
      expect(RoutingDecision.safeParse(at(c)).success, String(c)).toBe(true);
  });

  it("does not re-route a low-confidence decision", () => {
    expect(routingDecision({ routed: { agent: "writing", confidence: 0.1, reason: "unsure" } }).agent).toBe("writing");
  });
});
