import { describe, expect, it } from "vitest";
import { LIMITS, SCHEMA_VERSION, SessionEvent } from "@agentmesh/contracts";
import { completeTexts, openDraft, seal } from "./transition.js";
import { createSession } from "./runtime.js";
import { getWorkflow } from "./registry.js";
import { DEFAULTS, QUESTION, SID, T0 } from "./testing.js";

const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;
const event = (texts: ReturnType<typeof completeTexts>) => ({
  v: SCHEMA_VERSION,
  session_id: SID,
  version: 9,
  index: 1,
  timestamp: 1,
  type: "complete" as const,
  status: "completed" as const,
  ...texts,
});

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

describe("the transition's span attributes (a workflow's decision record)", () => {
  const trace = {
    trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
    root_span_id: "00f067aa0ba902b7",
    parent_span_id: null,
    sampled: true,
  };
  const prev = createSession({
    sessionId: SID,
    workflow: "critic-chain",
    query: QUESTION,
    options: {},
    now: T0,
    defaults: DEFAULTS,
    trace,
  });

  it("a new session keeps the trace context it was created with", () => {
    expect(prev.meta.trace).toEqual(trace);
  });

  it("are sealed into the outcome when the workflow gave some, and absent otherwise", () => {
    const def = getWorkflow("critic-chain")!;
    const plain = seal(openDraft(prev, def, { now: T0, defaults: DEFAULTS }, "test:input"));
    expect(plain.kind === "apply" && plain.spanAttributes).toBeUndefined();
    const d = openDraft(prev, def, { now: T0, defaults: DEFAULTS }, "test:input");
    d.span = { "orchestrator_decision.next_agent": "research", "orchestrator_decision.iteration": 2 };
    const sealed = seal(d);
    expect(sealed.kind === "apply" && sealed.spanAttributes).toEqual({
      "orchestrator_decision.next_agent": "research",
      "orchestrator_decision.iteration": 2,
    });
  });
});
