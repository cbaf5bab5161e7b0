import { describe, expect, it } from "vitest";
import { EMPTY_MEMORY, ROLES, type OpRequest, type StepResult } from "@agentmesh/contracts";
import { foldMemory } from "./fold.js";

const STEP = {
  description: "Evaluate the expression exactly",
  tool: "calculator",
  args: [],
  expected_outcome: "a number",
};
const ok = (tool = "calculator"): StepResult => ({
  strategy: "tool",
  tool,
  ok: true,
  output: "42",
  error: null,
  latency_ms: 1,
  attempts: 1,
  records: [],
  citations: [],
});
const failed = (tool: string, code: "tool_unavailable" | "timeout" | "permission_denied"): StepResult => ({
  ...ok(tool),
  ok: false,
  output: null,
  error: { code, message: `${code} for ${tool}`, retryable: code === "timeout" },
});
const step = (result: StepResult, memory = EMPTY_MEMORY): OpRequest<"memory", "update"> => ({
  question: "What is 6 * 7?",
  memory,
  event: { kind: "step", step_index: 0, step: { ...STEP, tool: result.tool }, result, critic: null },
});

describe("memory.update fold", () => {
  it("adds one item of at most 240 characters per event and keeps the last 100", () => {
    let m = EMPTY_MEMORY;
    for (let i = 0; i < 105; i++)
      m = foldMemory({
        question: "q".repeat(500),
        memory: m,
        event: { kind: "user_reply", question_for_human: "Which?", text: `answer ${i} ${"x".repeat(400)}` },
      });
    expect(m.short_term).toHaveLength(100);
    expect(m.short_term[0]?.content).toContain("answer 5 ");
    expect(Math.max(...m.short_term.map((x) => x.content.length))).toBeLessThanOrEqual(240);
    expect(ROLES.memory.update.response.safeParse(m).success).toBe(true);
  });

  it("records the question's perception as a query item", () => {
    const snapshot = {
      entities: [{ text: "Redis", kind: "name" as const }],
      intent: "lookup" as const,
      constraints: [],
      sub_goals: [],
      confidence: 0.7,
      suspicious_patterns: ["xss"],
      goal_satisfied: null,
      notes: "",
    };
    const m = foldMemory({ question: "What is Redis?", memory: EMPTY_MEMORY, event: { kind: "perception", snapshot } });
    expect(m.short_term).toEqual([
      {
        kind: "query",
        content: 'Asked "What is Redis?": intent lookup; entities Redis; flagged xss',
        step_index: null,
      },
    ]);
  });

  it("bans a tool on a failure that cannot pass, once; not on a retryable one", () => {
    let m = foldMemory(step(failed("web_search", "tool_unavailable")));
    m = foldMemory(step(failed("web_search", "tool_unavailable"), m));
    m = foldMemory(step(failed("run_python", "permission_denied"), m));
    m = foldMemory(step(failed("test_slow", "timeout"), m));
    expect(m.banned_tools.map((b) => b.tool)).toEqual(["web_search", "run_python"]);
    expect(m.banned_tools[0]?.reason).toBe("tool_unavailable: tool_unavailable for web_search");
  });

  it("counts a tool's successes (the summarize step is not a tool)", () => {
    let m = foldMemory(step(ok()));
    m = foldMemory(step(ok(), m));
    m = foldMemory(step(ok("summarize"), m));
    expect(m.successful_tools).toEqual([
      { tool: "calculator", purpose: "Evaluate the expression exactly", successes: 2 },
    ]);
    expect(m.short_term.at(-1)?.content).toBe("Step 1 summarize (tool) ok: 42");
  });

  it("is pure: the memory it was given is not changed", () => {
    const before = foldMemory(step(ok()));
    const copy = structuredClone(before);
    foldMemory(step(failed("web_search", "tool_unavailable"), before));
    expect(before).toEqual(copy);
  });
});
