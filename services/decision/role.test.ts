import { describe, expect, it } from "vitest";
import { EMPTY_MEMORY, type OpRequest } from "@agentmesh/contracts";
import decision from "./role.js";

const request = (memory = EMPTY_MEMORY): OpRequest<"decision", "plan"> => ({
  question: "How does Redis persist data?",
  perception: {
    entities: [],
    intent: "explanation",
    constraints: [],
    sub_goals: [],
    confidence: 0.7,
    suspicious_patterns: [],
    goal_satisfied: null,
    notes: "",
  },
  retrieval: null,
  memory,
  tools: [],
  max_steps: 5,
  strategy_profile: "CONSERVATIVE",
  previous_plan: null,
  failed_step_index: null,
  rewrite_suggestion: null,
});

describe("decision.plan's prompt", () => {
  it("shows the planner the memory's critic-derived patterns, and says nothing of them when there are none", () => {
    const render = (m = EMPTY_MEMORY) => {
      const op = decision.ops.plan;
      if (op.kind === "handler") throw new Error("decision.plan is a prompt op");
      return op.render(request(m));
    };
    const patterns = [
      { kind: "avoid" as const, tool: "web_search", pattern: "web_search (web) gave a rejected result", seen: 2 },
      { kind: "ask" as const, tool: null, pattern: "Steps like these needed a person", seen: 1 },
    ];
    expect(render({ ...EMPTY_MEMORY, patterns })).toContain(
      "What the critic's reports showed so far:\n- avoid web_search: web_search (web) gave a rejected result (×2)\n- ask: Steps like these needed a person (×1)",
    );
    expect(render()).not.toContain("critic's reports");
  });
});
