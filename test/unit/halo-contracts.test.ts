import { describe, expect, it } from "vitest";
import {
  Capability,
  CapabilityPlan,
  DomainHints,
  HALO_LIMITS,
  HaloCitation,
  HaloData,
  SessionData,
  SessionEvent,
  SpecialistAnswer,
  SpecialistOutput,
} from "@agentmesh/contracts";

// Halo's contracts (packages/contracts/src/halo.ts). Contracts may import nothing but
// zod, so its test lives here.

const web: HaloCitation = { title: "NCCN", url: "https://example.com/nccn", path: null, snippet: "HER2+ regimens" };
const triple: HaloCitation = { title: "HER2 interacts_with HER3", url: null, path: "kg/triples.jsonl:12", snippet: "" };

describe("halo contracts", () => {
  it("names the capability tags in their fixed order", () => {
    expect(Capability.options).toEqual(["graph", "rag", "biomcp", "web", "llama_mcp", "chitchat"]);
  });

  it("needs a url or a path on a citation, and announces one as a source event unchanged", () => {
    expect(HaloCitation.safeParse({ ...web, url: null }).success).toBe(false);
    expect(HaloCitation.safeParse({ ...web, url: "not a url" }).success).toBe(false);
    for (const c of [web, triple]) {
      const event = SessionEvent.parse({
        v: 1,
        session_id: "sess_test_0001",
        version: 2,
        index: 0,
        at: 1,
        type: "source",
        ...c,
      });
      expect(event).toMatchObject(c);
    }
  });

  it("takes a specialist's answer with its text and at most 10 citations", () => {
    expect(SpecialistAnswer.safeParse({ response_str: "HER2 binds HER3.", citations: [web, triple] }).success).toBe(
      true,
    );
    expect(SpecialistAnswer.safeParse({ response_str: "  \n", citations: [] }).success).toBe(false);
    expect(
      SpecialistAnswer.safeParse({
        response_str: "x",
        citations: Array(HALO_LIMITS.maxCitationsPerAnswer + 1).fill(web),
      }).success,
    ).toBe(false);
    expect(
      SpecialistAnswer.safeParse({ response_str: "x".repeat(HALO_LIMITS.maxAnswerChars + 1), citations: [] }).success,
    ).toBe(false);
  });

  it("parses the planner's output shape and leaves the empty list and repeats to the workflow", () => {
    expect(CapabilityPlan.parse({ capabilities: ["graph", "rag", "graph"] }).capabilities).toEqual([
      "graph",
      "rag",
      "graph",
    ]);
    expect(CapabilityPlan.safeParse({ capabilities: [] }).success).toBe(true);
    expect(CapabilityPlan.safeParse({ capabilities: ["unknown"] }).success).toBe(false);
  });

  it("keeps a specialist's status, error code and citations consistent", () => {
    const answered = {
      capability: "rag",
      status: "answered",
      response_str: "x",
      citations: [web],
      error_code: null,
      latency_ms: 5,
    };
    expect(SpecialistOutput.safeParse(answered).success).toBe(true);
    expect(SpecialistOutput.safeParse({ ...answered, error_code: "tool_error" }).success).toBe(false);
    const down = {
      ...answered,
      status: "unavailable",
      response_str: "The rag specialist is unavailable right now.",
      citations: [],
      error_code: "deadline_exceeded",
    };
    expect(SpecialistOutput.safeParse(down).success).toBe(true);
    expect(SpecialistOutput.safeParse({ ...down, error_code: null }).success).toBe(false);
    expect(SpecialistOutput.safeParse({ ...down, citations: [web] }).success).toBe(false);
  });

  it("takes domain hints per capability only", () => {
    expect(DomainHints.safeParse({ biomcp: { bonus: 2, keywords: ["trial"] } }).success).toBe(true);
    expect(DomainHints.safeParse({ astrology: { bonus: 1, keywords: ["star"] } }).success).toBe(false);
    expect(DomainHints.safeParse({ graph: { bonus: 0, keywords: ["x"] } }).success).toBe(false);
  });

  it("holds a finished halo session's data as a SessionData case", () => {
    const data = {
      workflow: "halo",
      question: "HER2 and HR status interactions?",
      phase: "done",
      available_capabilities: ["graph", "rag", "chitchat"],
      join_deadline_ms: HALO_LIMITS.defaultJoinDeadlineMs,
      domain_hints: null,
      capabilities: ["graph", "rag"],
      plan_source: "override",
      plan_fallback_reason: null,
      pending: [],
      outputs: [
        {
          capability: "graph",
          status: "answered",
          response_str: "HER2 interacts with HER3.",
          citations: [triple],
          error_code: null,
          latency_ms: 40,
        },
      ],
      response_str: "[HALO] HER2 interacts with HER3 [1].\n\nSources:\n1) kg/triples.jsonl:12",
      citations: [triple],
      judge_response: "graph: score 1, citations 1, length 25 (primary)",
      error: null,
      error_component: null,
    };
    expect(HaloData.parse(data)).toEqual(data);
    expect(HaloData.safeParse({ ...data, available_capabilities: [] }).success).toBe(false);
    expect(SessionData.parse(data)).toEqual(data);
    expect(SessionData.safeParse({ ...data, phase: "thinking" }).success).toBe(false);
  });
});
