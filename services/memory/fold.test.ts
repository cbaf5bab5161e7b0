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

const REPORT = {
  quality: 0.9,
  hallucination_risk: 0.1,
  issues: [],
  is_acceptable: true,
  rewrite_suggestion: null,
  requires_human_input: false,
  question_for_human: null,
};
const reviewed = (result: StepResult, critic: typeof REPORT, memory = EMPTY_MEMORY): OpRequest<"memory", "update"> => ({
  ...step(result, memory),
  event: { kind: "step", step_index: 0, step: { ...STEP, tool: result.tool }, result, critic },
});

describe("memory.update fold: patterns and long-term references", () => {
  it("folds a report's patterns: a kind kept for a tool is restated and counted, a new one appended", () => {
    const prefer = { kind: "prefer" as const, tool: "calculator", pattern: "calculator works for arithmetic" };
    let m = foldMemory(reviewed(ok(), REPORT), [prefer]);
    m = foldMemory(reviewed(ok(), REPORT, m), [{ ...prefer, pattern: "calculator is exact" }]);
    m = foldMemory(reviewed(ok(), REPORT, m), [{ kind: "ask", tool: null, pattern: "ask about units" }]);
    expect(m.patterns).toEqual([
      { kind: "prefer", tool: "calculator", pattern: "calculator is exact", seen: 2 },
      { kind: "ask", tool: null, pattern: "ask about units", seen: 1 },
    ]);
    expect(ROLES.memory.update.response.safeParse(m).success).toBe(true);
  });

  it("drops a pattern about another tool than the step's, and counts a report once per kind", () => {
    const m = foldMemory(reviewed(ok(), REPORT), [
      { kind: "avoid", tool: "web_search", pattern: "web_search is noisy" },
      { kind: "prefer", tool: "calculator", pattern: "first" },
      { kind: "prefer", tool: "calculator", pattern: "second" },
    ]);
    expect(m.patterns).toEqual([{ kind: "prefer", tool: "calculator", pattern: "first", seen: 1 }]);
  });

  it("folds no patterns without a critic report, and keeps the latest 20", () => {
    expect(foldMemory(step(ok()), [{ kind: "prefer", tool: "calculator", pattern: "x" }]).patterns).toEqual([]);
    let m = EMPTY_MEMORY;
    for (let i = 0; i < 25; i++) {
      const tool = `tool_${i}`;
      m = foldMemory(reviewed(ok(tool), REPORT, m), [{ kind: "prefer", tool, pattern: `${tool} works` }]);
    }
    expect(m.patterns).toHaveLength(20);
    expect(m.patterns[0]?.tool).toBe("tool_5");
  });

  it("writes a long-term reference for an accepted step only, once, after the thread's own", () => {
    const thread = { ...EMPTY_MEMORY, long_term_refs: ["Answered an earlier question: 41"] };
    const cited = { ...ok("corpus_search"), citations: [{ path: "redis-persistence.md", passage: "AOF" }] };
    let m = foldMemory(reviewed(cited, REPORT, thread));
    m = foldMemory(reviewed(cited, REPORT, m));
    m = foldMemory(reviewed(ok(), { ...REPORT, is_acceptable: false, quality: 0.2 }, m));
    m = foldMemory(step(ok(), m)); // no report: nothing accepted
    expect(m.long_term_refs).toEqual([
      "Answered an earlier question: 41",
      "Evaluate the expression exactly (corpus_search, redis-persistence.md): 42",
    ]);
    const summary = { ...reviewed(ok("summarize"), REPORT, m) };
    if (summary.event.kind === "step") summary.event.step = { ...STEP, tool: "summarize" };
    expect(foldMemory(summary).long_term_refs.at(-1)).toBe('Answered "What is 6 * 7?": 42');
  });

  it("keeps the latest 20 long-term references", () => {
    let m = { ...EMPTY_MEMORY, long_term_refs: Array.from({ length: 20 }, (_, i) => `earlier ${i}`) };
    m = foldMemory(reviewed({ ...ok(), output: "new" }, REPORT, m));
    expect(m.long_term_refs).toHaveLength(20);
    expect(m.long_term_refs[0]).toBe("earlier 1");
    expect(m.long_term_refs.at(-1)).toBe("Evaluate the expression exactly (calculator): new");
  });
});
