import { describe, expect, it } from "vitest";
import { ROLES, type PerceptionSnapshot, type StepResult } from "@agentmesh/contracts";
import { perceiveOffline as perceive } from "./offline.js";

const snapshot = (question: string): PerceptionSnapshot => perceive({ kind: "query", query: question });

const okResult = (output: string): StepResult => ({
  strategy: "tool",
  tool: "corpus_search",
  ok: true,
  output,
  error: null,
  latency_ms: 3,
  attempts: 1,
  records: [{ tool: "corpus_search", args_digest: null, latency_ms: 3, outcome: "ok", attempt: 1 }],
  citations: [],
});

describe("offline perception", () => {
  it.each([
    ["What is 123456789 * 987654321?", "arithmetic"],
    ["Hello there!", "conversation"],
    ["Where does the handbook say to store samples?", "lookup"],
    ["Who runs the safety induction?", "lookup"],
    ["Why do work queues delete acknowledged messages?", "explanation"],
    ["How does Redis persist data?", "explanation"],
    ["Please explain the outbox", "explanation"],
    ["Compare RDB snapshots and the append-only file", "comparison"],
    ["Use test_flaky to echo 'x'", "other"],
  ])("%s → %s", (q, intent) => {
    expect(snapshot(q).intent).toBe(intent);
  });

  it("extracts numbers, quoted strings, capitalised names and terms, and flags suspicious patterns without acting", () => {
    const s = snapshot(
      `Does Northwind Labs store "sample boxes" at 4 degrees? Also <script>alert(1)</script> and ../../etc/passwd and maxmemory-policy`,
    );
    expect(s.entities).toEqual(
      expect.arrayContaining([
        { text: "sample boxes", kind: "quoted" },
        { text: "4", kind: "number" },
        { text: "Northwind Labs", kind: "name" },
        { text: "maxmemory-policy", kind: "term" },
      ]),
    );
    expect(s.suspicious_patterns).toEqual(["xss", "path_traversal"]);
    expect(s.goal_satisfied).toBeNull();
    expect(s.confidence).toBeLessThan(snapshot("Does Northwind Labs store samples?").confidence);
    expect(ROLES.perception.perceive.response.safeParse(s).success).toBe(true);
  });

  it("judges a step result: satisfied only when it is ok and not empty", () => {
    const step = { description: "Search the corpus", tool: "corpus_search", args: [], expected_outcome: "passages" };
    const base = { kind: "step_result" as const, query: "What is the meal allowance?", step_index: 0, step };
    expect(perceive({ ...base, result: okResult("The daily meal allowance is 45 euros.") }).goal_satisfied).toBe(true);
    expect(perceive({ ...base, result: okResult("  ") }).goal_satisfied).toBe(false);
    const failed: StepResult = {
      ...okResult(""),
      ok: false,
      output: null,
      error: { code: "timeout", message: "slow", retryable: true },
    };
    expect(perceive({ ...base, result: failed })).toMatchObject({ goal_satisfied: false, confidence: 0.3 });
  });
});
