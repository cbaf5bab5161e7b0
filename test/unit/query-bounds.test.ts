// A query's length bounds: 1-5000 characters for every workflow, 3-5000 for the blackboard's.
import { checkQuery, LIMITS, queryMinChars, WorkflowName } from "@agentmesh/contracts";
import { describe, expect, it } from "vitest";

describe("checkQuery", () => {
  it("takes a one- or two-character question for every workflow but the blackboard's", () => {
    for (const w of WorkflowName.options.filter((x) => x !== "blackboard")) {
      expect(queryMinChars(w), w).toBe(1);
      expect(checkQuery("hi", w), w).toEqual({ ok: true, query: "hi" });
      expect(checkQuery(" ? ", w), w).toEqual({ ok: true, query: "?" });
    }
  });

  it("asks the blackboard workflow's question for at least 3 characters", () => {
    expect(checkQuery("hi", "blackboard")).toEqual({
      ok: false,
      reason: "the query is shorter than 3 characters (the blackboard workflow's minimum)",
    });
    expect(checkQuery("abc", "blackboard")).toEqual({ ok: true, query: "abc" });
  });

  it("refuses empty, non-text and over-long queries for every workflow", () => {
    for (const w of WorkflowName.options) {
      expect(checkQuery("   ", w)).toEqual({ ok: false, reason: "the query is empty" });
      expect(checkQuery(7, w)).toEqual({ ok: false, reason: "the query must be text" });
      expect(checkQuery("x".repeat(LIMITS.queryMaxChars), w).ok).toBe(true);
      expect(checkQuery("x".repeat(LIMITS.queryMaxChars + 1), w)).toEqual({
        ok: false,
        reason: `the query is longer than ${LIMITS.queryMaxChars} characters (5001)`,
      });
    }
  });
});
