import { describe, expect, it } from "vitest";
import { EMPTY_MEMORY, MemoryPatterns, type CriticReport, type OpRequest, type StepResult } from "@agentmesh/contracts";
import { derivePatterns } from "./offline.js";

const RESULT: StepResult = {
  strategy: "rag",
  tool: "corpus_search",
  ok: true,
  output: "Redis logs every write command.",
  error: null,
  latency_ms: 2,
  attempts: 1,
  records: [],
  citations: [],
};
const GOOD: CriticReport = {
  quality: 0.85,
  hallucination_risk: 0.1,
  issues: [],
  is_acceptable: true,
  rewrite_suggestion: null,
  requires_human_input: false,
  question_for_human: null,
};
const request = (critic: CriticReport | null, result = RESULT): OpRequest<"memory", "update"> => ({
  question: "How does Redis persist data?",
  memory: EMPTY_MEMORY,
  event: {
    kind: "step",
    step_index: 0,
    step: { description: "Search the corpus for persistence", tool: "corpus_search", args: [], expected_outcome: "" },
    result,
    critic,
  },
});

describe("memory's offline pattern rule", () => {
  it("prefers a tool whose result was accepted with quality of at least 0.8, and not below", () => {
    expect(derivePatterns(request(GOOD)).patterns).toEqual([
      {
        kind: "prefer",
        tool: "corpus_search",
        pattern: 'corpus_search (rag) gave an accepted result (quality 0.85) for "Search the corpus for persistence"',
      },
    ]);
    expect(derivePatterns(request({ ...GOOD, quality: 0.79 })).patterns).toEqual([]);
  });

  it("avoids a tool whose result was rejected, naming the first issue", () => {
    const rejected = { ...GOOD, is_acceptable: false, quality: 0.3, issues: ["off topic", "too short"] };
    expect(derivePatterns(request(rejected)).patterns).toEqual([
      {
        kind: "avoid",
        tool: "corpus_search",
        pattern:
          'corpus_search (rag) gave a rejected result (quality 0.3) for "Search the corpus for persistence": off topic',
      },
    ]);
  });

  it("says to verify a tool whose rejected result had a hallucination risk over 0.4, and to ask when a person was needed", () => {
    const made_up = {
      ...GOOD,
      is_acceptable: false,
      quality: 0.5,
      hallucination_risk: 0.7,
      requires_human_input: true,
      question_for_human: "Which Redis version?",
    };
    const out = derivePatterns(request(made_up));
    expect(out.patterns.map((p) => [p.kind, p.tool])).toEqual([
      ["ask", null],
      ["verify", "corpus_search"],
    ]);
    expect(out.patterns[0]?.pattern).toBe(
      `Steps like "Search the corpus for persistence" needed a person's input: Which Redis version?`,
    );
    expect(out.patterns[1]?.pattern).toContain("hallucination risk 0.7");
    expect(derivePatterns(request({ ...made_up, hallucination_risk: 0.4 })).patterns[1]?.kind).toBe("avoid");
  });

  it("shows nothing without a report, for the summarize step's praise, or for other events", () => {
    expect(derivePatterns(request(null)).patterns).toEqual([]);
    expect(derivePatterns(request(GOOD, { ...RESULT, tool: "summarize" })).patterns).toEqual([]);
    expect(
      derivePatterns({
        question: "Hello there",
        memory: EMPTY_MEMORY,
        event: { kind: "user_reply", question_for_human: "Which?", text: "v7" },
      }).patterns,
    ).toEqual([]);
  });

  it("always answers within the model call's schema, long descriptions and issues clipped", () => {
    const long = {
      ...GOOD,
      is_acceptable: false,
      quality: 0.1,
      issues: ["x".repeat(300)],
      requires_human_input: true,
      question_for_human: "q".repeat(500),
    };
    const req = request(long);
    if (req.event.kind === "step") req.event.step.description = "d".repeat(300);
    const out = derivePatterns(req);
    expect(MemoryPatterns.safeParse(out).success).toBe(true);
    expect(Math.max(...out.patterns.map((p) => p.pattern.length))).toBeLessThanOrEqual(200);
  });
});
