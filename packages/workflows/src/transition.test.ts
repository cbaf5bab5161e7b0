import { describe, expect, it } from "vitest";
import { LIMITS, SCHEMA_VERSION, SessionEvent } from "@agentmesh/contracts";
import { completeTexts } from "./transition.js";
import { SID } from "./testing.js";

const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;
const event = (texts: ReturnType<typeof completeTexts>) => ({ v: SCHEMA_VERSION, session_id: SID, version: 9, index: 1, at: 1, type: "complete" as const, status: "completed" as const, ...texts });

describe("the complete event's size", () => {
  it("carries short texts whole, with no truncation note", () => {
    expect(completeTexts(SID, "42", "because")).toEqual({ final_answer: "42", final_reasoning_trace: "because" });
  });

  it("cuts a long answer and trace to fit LIMITS.maxCompleteEventBytes, says so and where the whole text is", () => {
    // Multi-byte characters, characters JSON escapes (6 bytes each) and a surrogate pair at every cut point.
    const answer = "a€\u0001😀".repeat(120_000);
    const trace = "t\n".repeat(200_000);
    const t = completeTexts(SID, answer, trace);
    expect(t.truncated).toBe(true);
    expect(t.full_text_at).toContain(`agentmesh inspect ${SID}`);
    expect(answer.startsWith(t.final_answer)).toBe(true);
    expect(trace.startsWith(t.final_reasoning_trace)).toBe(true);
    expect(t.final_answer.length).toBeGreaterThan(10_000);
    expect(t.final_reasoning_trace.length).toBeGreaterThan(1000);
    expect(/[\ud800-\udbff]$/.test(t.final_answer)).toBe(false);
    const e = event(t);
    expect(bytes(e)).toBeLessThanOrEqual(LIMITS.maxCompleteEventBytes);
    expect(SessionEvent.safeParse(e).success).toBe(true);
  });

  it("the event schema refuses a complete event over the limit", () => {
    const e = event({ final_answer: "x".repeat(LIMITS.maxCompleteEventBytes), final_reasoning_trace: "" });
    expect(SessionEvent.safeParse(e).success).toBe(false);
  });
});
