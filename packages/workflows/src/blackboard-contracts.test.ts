import { describe, expect, it } from "vitest";
import {
  BLACKBOARD_LIMITS as L,
  CriticReport,
  ExecuteRequest,
  LIMITS,
  MemoryState,
  PerceiveRequest,
  PerceptionSnapshot,
  Plan,
  RetrievalBundle,
  RetrieveRequest,
  SessionOptions,
  StepResult,
  findOp,
  type Citation,
  type PlanStep,
  type RetrievalBundle as Bundle,
} from "@agentmesh/contracts";
import { bbOut } from "./blackboard-testkit.js";

const x = (n: number, c = "x") => c.repeat(n);
const ok = (schema: { safeParse(v: unknown): { success: boolean } }, v: unknown) => schema.safeParse(v).success;
const step = (over: Partial<PlanStep> = {}): PlanStep => ({
  description: "Compute the sum",
  tool: "calculator",
  args: [{ name: "expression", value: "1+1" }],
  expected_outcome: "2",
  ...over,
});
const summarize = step({ description: "Summarize the answer", tool: "summarize", args: [] });

describe("perception contracts", () => {
  it("takes a query of 3-5000 characters", () => {
    expect(ok(PerceiveRequest, { kind: "query", query: "abc" })).toBe(true);
    expect(ok(PerceiveRequest, { kind: "query", query: "ab" })).toBe(false);
    expect(ok(PerceiveRequest, { kind: "query", query: x(5000) })).toBe(true);
    expect(ok(PerceiveRequest, { kind: "query", query: x(5001) })).toBe(false);
  });

  it("takes a step result to analyse", () => {
    expect(
      ok(PerceiveRequest, {
        kind: "step_result",
        query: "abc",
        step_index: 0,
        step: step(),
        result: bbOut.ok("tool", "calculator", "2"),
      }),
    ).toBe(true);
  });

  it("caps entities at 50 and sub-goals at 10, confidence in 0-1", () => {
    const entity = { text: "e", kind: "term" };
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { entities: Array(50).fill(entity) }))).toBe(true);
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { entities: Array(51).fill(entity) }))).toBe(false);
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { sub_goals: Array(10).fill("g") }))).toBe(true);
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { sub_goals: Array(11).fill("g") }))).toBe(false);
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { confidence: 1 }))).toBe(true);
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { confidence: 1.01 }))).toBe(false);
    expect(ok(PerceptionSnapshot, bbOut.perception("lookup", { confidence: -0.01 }))).toBe(false);
  });
});

describe("memory contracts", () => {
  const item = { kind: "note", content: "c", step_index: null };
  it("caps short-term memory at 100 items", () => {
    expect(ok(MemoryState, { ...bbOut.memory(), short_term: Array(100).fill(item) })).toBe(true);
    expect(ok(MemoryState, { ...bbOut.memory(), short_term: Array(101).fill(item) })).toBe(false);
  });

  it("caps banned tools at 50, each banned once", () => {
    const banned = (n: number) => Array.from({ length: n }, (_, i) => ({ tool: `tool_${i}`, reason: "broken" }));
    expect(ok(MemoryState, { ...bbOut.memory(), banned_tools: banned(50) })).toBe(true);
    expect(ok(MemoryState, { ...bbOut.memory(), banned_tools: banned(51) })).toBe(false);
    expect(ok(MemoryState, { ...bbOut.memory(), banned_tools: [...banned(1), ...banned(1)] })).toBe(false);
  });

  it("caps successful tools at 100", () => {
    const used = { tool: "calculator", purpose: "sums", successes: 1 };
    expect(ok(MemoryState, { ...bbOut.memory(), successful_tools: Array(100).fill(used) })).toBe(true);
    expect(ok(MemoryState, { ...bbOut.memory(), successful_tools: Array(101).fill(used) })).toBe(false);
  });

  it("caps patterns at 20, one per kind and tool, and long-term references at 20", () => {
    const pattern = (i: number, kind = "prefer") => ({ kind, tool: `tool_${i}`, pattern: "works", seen: 1 });
    const patterns = (n: number) => Array.from({ length: n }, (_, i) => pattern(i));
    expect(ok(MemoryState, { ...bbOut.memory(), patterns: patterns(20) })).toBe(true);
    expect(ok(MemoryState, { ...bbOut.memory(), patterns: patterns(21) })).toBe(false);
    expect(ok(MemoryState, { ...bbOut.memory(), patterns: [pattern(1), pattern(1)] })).toBe(false);
    expect(ok(MemoryState, { ...bbOut.memory(), patterns: [pattern(1), pattern(1, "avoid")] })).toBe(true);
    expect(ok(MemoryState, { ...bbOut.memory(), long_term_refs: Array(20).fill("ref") })).toBe(true);
    expect(ok(MemoryState, { ...bbOut.memory(), long_term_refs: Array(21).fill("ref") })).toBe(false);
  });
});

describe("retriever contracts", () => {
  const req = (query: string) => ({ query, strategies: ["memory", "corpus"], memory: bbOut.memory(), max_items: 20 });
  it("takes a query of 3-500 characters and distinct strategies", () => {
    expect(ok(RetrieveRequest, req("abc"))).toBe(true);
    expect(ok(RetrieveRequest, req("ab"))).toBe(false);
    expect(ok(RetrieveRequest, req(x(500)))).toBe(true);
    expect(ok(RetrieveRequest, req(x(501)))).toBe(false);
    expect(ok(RetrieveRequest, { ...req("abc"), strategies: ["web", "web"] })).toBe(false);
  });

  it("caps items at 20, relevance in 0-1, a citation for corpus items, a summary when there are items", () => {
    const item = bbOut.retrieval().items[0];
    expect(ok(RetrievalBundle, { ...bbOut.retrieval(), items: Array(20).fill(item) })).toBe(true);
    expect(ok(RetrievalBundle, { ...bbOut.retrieval(), items: Array(21).fill(item) })).toBe(false);
    expect(ok(RetrievalBundle, { ...bbOut.retrieval(), items: [{ ...item, relevance: 1.5 }] })).toBe(false);
    expect(ok(RetrievalBundle, { ...bbOut.retrieval(), items: [{ ...item, citation: null }] })).toBe(false);
    expect(ok(RetrievalBundle, { ...bbOut.retrieval(), items: [{ ...item, source: "web", citation: null }] })).toBe(
      true,
    );
    expect(ok(RetrievalBundle, { ...bbOut.retrieval(), summary: " " })).toBe(false);
  });
});

describe("decision contracts", () => {
  it("caps plans at 20 steps, each described in at least 5 characters", () => {
    expect(ok(Plan, { steps: [...Array(19).fill(step()), summarize], rationale: "" })).toBe(true);
    expect(ok(Plan, { steps: [...Array(20).fill(step()), summarize], rationale: "" })).toBe(false);
    expect(ok(Plan, { steps: [step({ description: "Add." }), summarize], rationale: "" })).toBe(false);
    expect(ok(Plan, { steps: [step({ description: "     " }), summarize], rationale: "" })).toBe(false);
  });

  it("requires one summarize step, last", () => {
    expect(ok(Plan, { steps: [step()], rationale: "" })).toBe(false);
    expect(ok(Plan, { steps: [summarize, step(), summarize], rationale: "" })).toBe(false);
    expect(ok(Plan, { steps: [summarize], rationale: "" })).toBe(true);
  });

  it("names a registry tool and bounded, distinct arguments", () => {
    expect(ok(Plan, { steps: [step({ tool: "Rm -rf" }), summarize], rationale: "" })).toBe(false);
    expect(
      ok(Plan, {
        steps: [
          step({
            args: [
              { name: "a", value: 1 },
              { name: "a", value: 2 },
            ],
          }),
          summarize,
        ],
        rationale: "",
      }),
    ).toBe(false);
    expect(ok(Plan, { steps: [step({ args: [{ name: "code", value: x(2000) }] }), summarize], rationale: "" })).toBe(
      false,
    );
  });
});

describe("executor contracts", () => {
  const base = {
    question: "abc",
    step_index: 0,
    step: step(),
    strategy: "tool",
    query: null,
    limits: { max_attempts: 3, timeout_ms: 5000 },
    policy: { listed: ["calculator"], banned: [] },
    context: null,
  };
  it("allows at most 3 attempts of 3-5 s per tool call", () => {
    expect(ok(ExecuteRequest, base)).toBe(true);
    expect(ok(ExecuteRequest, { ...base, limits: { max_attempts: 4, timeout_ms: 5000 } })).toBe(false);
    expect(ok(ExecuteRequest, { ...base, limits: { max_attempts: 3, timeout_ms: 2999 } })).toBe(false);
    expect(ok(ExecuteRequest, { ...base, limits: { max_attempts: 3, timeout_ms: 5001 } })).toBe(false);
  });

  it("needs a query for rag and web, and a context only for summarize", () => {
    expect(ok(ExecuteRequest, { ...base, strategy: "rag" })).toBe(false);
    expect(ok(ExecuteRequest, { ...base, strategy: "rag", query: "deadlines" })).toBe(true);
    expect(ok(ExecuteRequest, { ...base, step: summarize })).toBe(false);
    expect(
      ok(ExecuteRequest, { ...base, step: summarize, context: { results: [], retrieval: null, user_replies: [] } }),
    ).toBe(true);
  });

  it("reports ok with an output and no error, or a typed error; at most 3 attempt records", () => {
    expect(ok(StepResult, bbOut.ok("tool", "calculator", "2"))).toBe(true);
    expect(ok(StepResult, bbOut.fail("tool", "run_python", "sandbox_unavailable", false))).toBe(true);
    expect(
      ok(StepResult, {
        ...bbOut.ok("tool", "calculator", "2"),
        error: { code: "tool_error", message: "x", retryable: true },
      }),
    ).toBe(false);
    expect(ok(StepResult, { ...bbOut.fail("tool", "calculator", "tool_error", true), error: null })).toBe(false);
    expect(ok(StepResult, { ...bbOut.ok("tool", "calculator", "2"), attempts: 4 })).toBe(false);
    const rec = bbOut.ok("tool", "calculator", "2").records[0];
    expect(ok(StepResult, { ...bbOut.ok("tool", "calculator", "2"), records: [rec, rec, rec, rec] })).toBe(false);
  });
});

describe("critic contracts", () => {
  it("scores quality and hallucination risk in 0-1, at most 20 issues", () => {
    expect(ok(CriticReport, bbOut.report(false, { issues: Array(20).fill("i") }))).toBe(true);
    expect(ok(CriticReport, bbOut.report(false, { issues: Array(21).fill("i") }))).toBe(false);
    expect(ok(CriticReport, bbOut.report(true, { quality: 1.2 }))).toBe(false);
    expect(ok(CriticReport, bbOut.report(true, { hallucination_risk: -0.1 }))).toBe(false);
  });

  it("needs a question when it asks for a person", () => {
    expect(ok(CriticReport, bbOut.report(true, { requires_human_input: true }))).toBe(false);
    expect(
      ok(CriticReport, bbOut.report(true, { requires_human_input: true, question_for_human: "Which unit?" })),
    ).toBe(true);
  });
});

describe("session options", () => {
  it("accepts the three strategy profiles and nothing else", () => {
    for (const p of ["CONSERVATIVE", "EXPLORATORY", "FALLBACK"])
      expect(ok(SessionOptions, { strategy_profile: p })).toBe(true);
    expect(ok(SessionOptions, { strategy_profile: "RECKLESS" })).toBe(false);
  });
});

describe("every blackboard task fits in one message", () => {
  // Every list full and every string at its cap (ASCII): the worst case the schemas allow.
  const cite: Citation = { path: x(300), passage: x(500) };
  const snapshot = {
    entities: Array(L.maxEntities).fill({ text: x(100), kind: "quoted" }),
    intent: "comparison",
    constraints: Array(10).fill(x(200)),
    sub_goals: Array(L.maxSubGoals).fill(x(200)),
    confidence: 0.123456789,
    suspicious_patterns: Array(10).fill(x(60)),
    goal_satisfied: true,
    notes: x(1000),
  };
  const tool = (i: number) => `t${String(i).padStart(39, "0")}`;
  const memory = {
    short_term: Array(L.maxShortTermItems).fill({ kind: "perception", content: x(240), step_index: 19 }),
    banned_tools: Array.from({ length: L.maxBannedTools }, (_, i) => ({ tool: tool(i), reason: x(200) })),
    successful_tools: Array.from({ length: L.maxSuccessfulTools }, (_, i) => ({
      tool: tool(i),
      purpose: x(120),
      successes: 123456789,
    })),
    // one per kind and tool, so the largest list names a tool each
    patterns: Array.from({ length: L.maxPatterns }, (_, i) => ({
      kind: "avoid",
      tool: tool(i),
      pattern: x(200),
      seen: 123456789,
    })),
    long_term_refs: Array(L.maxLongTermRefs).fill(x(200)),
  };
  const bundle: Bundle = {
    items: Array(L.maxRetrievedItems).fill({
      source: "corpus",
      content: x(1000),
      relevance: 0.123456789,
      citation: cite,
    }),
    summary: x(2000),
    open_questions: Array(10).fill(x(300)),
    corpus_ranking: { method: "bm25", note: x(300) },
  };
  const fullStep = (t: string): PlanStep => ({
    description: x(300),
    tool: t,
    args: [{ name: "code", value: x(2000 - 32) }],
    expected_outcome: x(300),
  });
  const plan = {
    steps: [
      ...Array.from({ length: L.maxPlanSteps - 1 }, (_, i) => fullStep(tool(i))),
      { ...fullStep("summarize"), args: [] },
    ],
    rationale: x(1000),
  };
  const schema = { type: "object", description: x(2900) };
  const tools = Array.from({ length: L.maxTools }, (_, i) => ({
    name: tool(i),
    description: x(500),
    input_schema: schema,
  }));
  const result = {
    strategy: "rag",
    tool: tool(1),
    ok: true,
    output: x(4000),
    error: null,
    latency_ms: 123456.789,
    attempts: 3,
    records: Array(3).fill({
      tool: tool(1),
      args_digest: x(64, "a"),
      latency_ms: 123456.789,
      outcome: "ok",
      attempt: 3,
    }),
    citations: Array(10).fill(cite),
  };
  const report = {
    quality: 0.123456789,
    hallucination_risk: 0.123456789,
    issues: Array(L.maxIssues).fill(x(300)),
    is_acceptable: false,
    rewrite_suggestion: x(1000),
    requires_human_input: true,
    question_for_human: x(500),
  };
  const question = x(L.queryMaxChars);
  const accepted = {
    plan_version: 6,
    step_index: 18,
    description: x(300),
    tool: tool(2),
    strategy: "web",
    output: x(2000),
    citations: Array(5).fill(cite),
  };
  const requests: Array<[string, string, unknown]> = [
    [
      "perception",
      "perceive",
      { kind: "step_result", query: question, step_index: 19, step: fullStep(tool(3)), result },
    ],
    [
      "memory",
      "update",
      { question, memory, event: { kind: "step", step_index: 19, step: fullStep(tool(3)), result, critic: report } },
    ],
    [
      "memory",
      "update",
      { question, memory, event: { kind: "user_reply", question_for_human: x(500), text: question } },
    ],
    ["retriever", "retrieve", { query: x(500), strategies: ["memory", "corpus", "web"], memory, max_items: 20 }],
    [
      "decision",
      "plan",
      {
        question,
        perception: snapshot,
        retrieval: bundle,
        memory,
        tools,
        max_steps: 20,
        strategy_profile: "EXPLORATORY",
        previous_plan: plan,
        failed_step_index: 19,
        rewrite_suggestion: x(2000),
      },
    ],
    [
      "executor",
      "execute",
      {
        question,
        step_index: 19,
        step: { ...fullStep("summarize"), args: [] },
        strategy: "tool",
        query: null,
        limits: { max_attempts: 3, timeout_ms: 5000 },
        policy: {
          listed: Array.from({ length: L.maxTools }, (_, i) => tool(i)),
          banned: Array.from({ length: L.maxBannedTools }, (_, i) => tool(i)),
        },
        context: {
          results: Array(L.maxPlanSteps - 1).fill(accepted),
          retrieval: bundle,
          user_replies: Array(3).fill(question),
        },
      },
    ],
    ["executor", "list_tools", { max_tools: 16 }],
    [
      "critic",
      "report",
      {
        question,
        step_index: 19,
        step: fullStep(tool(3)),
        is_final_step: true,
        result,
        perception: snapshot,
        retrieval: bundle,
      },
    ],
  ];

  it.each(requests.map(([role, op, input], i) => ({ name: `${role}.${op} #${i}`, role, op, input })))(
    "$name: the largest valid request is under 256 KB",
    ({ role, op, input }) => {
      const def = findOp(role, op);
      expect(def).not.toBeNull();
      const parsed = def!.request.safeParse(input);
      expect(parsed.success, JSON.stringify(parsed.error?.issues.slice(0, 3))).toBe(true);
      // The envelope around the input adds well under 1 KB.
      const bytes = new TextEncoder().encode(JSON.stringify(input)).length;
      expect(bytes).toBeLessThan(LIMITS.maxMessageBytes - 1024);
    },
  );

  it("the largest outputs are valid too (so the sizes above are reachable, not hypothetical)", () => {
    expect(ok(PerceptionSnapshot, snapshot)).toBe(true);
    expect(ok(MemoryState, memory)).toBe(true);
    expect(ok(RetrievalBundle, bundle)).toBe(true);
    expect(ok(Plan, plan)).toBe(true);
    expect(ok(StepResult, result)).toBe(true);
    expect(ok(CriticReport, report)).toBe(true);
  });
});
