import { describe, expect, it } from "vitest";
import {
  Attachment,
  CodeLanguage,
  DataInput,
  HANDOFF_MATRIX,
  HandoffArgs,
  HandoffInfo,
  LIMITS,
  LOW_ROUTING_CONFIDENCE,
  MAX_HANDOFFS,
  NOTE_PRIORITY,
  NoteField,
  RESEARCH_DEPTHS,
  ResearchDepth,
  RoutingDecision,
  RoutingResult,
  STREAMING_CONFIG,
  SessionOptions,
  SUPERVISOR_LIMITS,
  SessionEvent,
  SharedAgentMemory,
  SupervisorAgent,
  VegaLiteSpec,
  attachmentBytes,
  inHandoffMatrix,
} from "@agentmesh/contracts";

// The supervisor's contracts (packages/contracts/src/supervisor.ts; docs/workflows/supervisor.md).
// Contracts may import nothing but zod, so its test lives here.

const x = (n: number) => "x".repeat(n);
const handoff: HandoffInfo = {
  source_agent: "chat",
  target_agent: "research",
  task_description: "Find the latest JetStream docs",
  context: null,
};

describe("routing", () => {
  it("takes the router's output {agent, confidence, reason} and refuses anything else", () => {
    expect(RoutingResult.parse({ agent: "data", confidence: 0.8, reason: "mentions a CSV" })).toEqual({
      agent: "data",
      confidence: 0.8,
      reason: "mentions a CSV",
    });
    expect(RoutingResult.safeParse({ agent: "sales", confidence: 0.8, reason: "" }).success).toBe(false);
    expect(RoutingResult.safeParse({ agent: "chat", confidence: 1.01, reason: "" }).success).toBe(false);
    expect(RoutingResult.safeParse({ agent: "chat", confidence: -0.01, reason: "" }).success).toBe(false);
    expect(RoutingResult.safeParse({ agent: "chat", confidence: "0.9", reason: "" }).success).toBe(false);
    expect(RoutingResult.safeParse({ agent: "chat", reason: "no confidence" }).success).toBe(false);
    expect(
      RoutingResult.safeParse({
        agent: "chat",
        confidence: 0.9,
        reason: x(SUPERVISOR_LIMITS.maxRoutingReasonChars + 1),
      }).success,
    ).toBe(false);
  });

  it(`flags a decision low-confidence exactly when the confidence is under ${LOW_ROUTING_CONFIDENCE}`, () => {
    expect(LOW_ROUTING_CONFIDENCE).toBe(0.5);
    const d = { agent: "chat", reason: "r" };
    expect(RoutingDecision.safeParse({ ...d, confidence: 0.5, is_low_confidence: false }).success).toBe(true);
    expect(RoutingDecision.safeParse({ ...d, confidence: 0.49, is_low_confidence: true }).success).toBe(true);
    expect(RoutingDecision.safeParse({ ...d, confidence: 0.5, is_low_confidence: true }).success).toBe(false);
    expect(RoutingDecision.safeParse({ ...d, confidence: 0.1, is_low_confidence: false }).success).toBe(false);
  });

  it("carries a routing decision as a routing event unchanged", () => {
    const decision: RoutingDecision = {
      agent: "code",
      confidence: 0.3,
      reason: "mentions a script",
      is_low_confidence: true,
    };
    const event = SessionEvent.parse({
      v: 1,
      session_id: "sess_test_0001",
      version: 1,
      index: 0,
      timestamp: 1,
      type: "routing",
      ...decision,
    });
    expect(event).toMatchObject(decision);
  });
});

describe("handoffs", () => {
  it("has the handoff matrix, in the agents' order, and a cap of 3", () => {
    expect(HANDOFF_MATRIX).toEqual({
      chat: ["research", "code", "writing", "data"],
      research: ["code", "data"],
      writing: ["research"],
      code: ["data"],
      data: ["code"],
    });
    expect(MAX_HANDOFFS).toBe(3);
  });

  it("records only a handoff the matrix allows (never one to the same agent)", () => {
    for (const source of SupervisorAgent.options) {
      for (const target of SupervisorAgent.options) {
        const allowed = HANDOFF_MATRIX[source].includes(target);
        expect(inHandoffMatrix({ source_agent: source, target_agent: target }), `${source}→${target}`).toBe(allowed);
        expect(
          HandoffInfo.safeParse({ ...handoff, source_agent: source, target_agent: target }).success,
          `${source}→${target}`,
        ).toBe(allowed);
      }
    }
    for (const a of SupervisorAgent.options) expect(inHandoffMatrix({ source_agent: a, target_agent: a })).toBe(false);
  });

  it("needs a task; bounds the task and the context", () => {
    expect(HandoffInfo.safeParse({ ...handoff, task_description: "" }).success).toBe(false);
    expect(HandoffInfo.safeParse({ ...handoff, task_description: x(2000), context: x(2000) }).success).toBe(true);
    expect(HandoffInfo.safeParse({ ...handoff, task_description: x(2001) }).success).toBe(false);
    expect(HandoffInfo.safeParse({ ...handoff, context: x(2001) }).success).toBe(false);
  });

  it("announces a recorded handoff as a handoff event unchanged, and refuses an event outside the matrix", () => {
    const base = { v: 1, session_id: "sess_test_0001", version: 1, index: 0, timestamp: 1, type: "handoff" };
    expect(SessionEvent.parse({ ...base, ...handoff })).toMatchObject(handoff);
    expect(
      SessionEvent.safeParse({ ...base, ...handoff, source_agent: "research", target_agent: "writing" }).success,
    ).toBe(false);
  });

  it("takes a handoff tool's arguments with the context optional and a task that is not blank", () => {
    expect(HandoffArgs.parse({ task_description: "Plot it" })).toEqual({ task_description: "Plot it" });
    expect(HandoffArgs.safeParse({ task_description: "  \n" }).success).toBe(false);
    expect(HandoffArgs.safeParse({ context: "c" }).success).toBe(false);
    expect(HandoffArgs.safeParse({ task_description: "t", context: x(2001) }).success).toBe(false);
  });
});

describe("shared notes", () => {
  it("has the ten fields verbatim, in its order, all optional", () => {
    expect(NoteField.options).toEqual([
      "research_findings",
      "research_sources",
      "generated_code",
      "code_language",
      "execution_results",
      "writing_outline",
      "writing_draft",
      "data_analysis_plan",
      "data_visualizations",
      "additional_context",
    ]);
    expect(SharedAgentMemory.parse({})).toEqual({});
  });

  it("has the priority table", () => {
    expect(NOTE_PRIORITY).toEqual({
      research_findings: 3,
      generated_code: 3,
      writing_draft: 3,
      research_sources: 2,
      execution_results: 2,
      writing_outline: 2,
      data_analysis_plan: 2,
      additional_context: 2,
      code_language: 1,
      data_visualizations: 1,
    });
    expect(Object.keys(NOTE_PRIORITY).sort()).toEqual([...NoteField.options].sort());
  });

  it("takes sources with a url or a path, a sandbox language and Vega-Lite charts", () => {
    const memory = {
      research_findings: "JetStream persists streams.",
      research_sources: [
        { title: "JetStream", url: "https://docs.nats.io/jetstream", path: null, snippet: "" },
        { title: "notes", url: null, path: "corpus/notes.md", snippet: "local" },
      ],
      code_language: "python",
      data_visualizations: [{ mark: "bar", data: { values: [{ a: 1 }] } }],
    };
    expect(SharedAgentMemory.parse(memory)).toEqual(memory);
    expect(
      SharedAgentMemory.safeParse({ research_sources: [{ title: "t", url: null, path: null, snippet: "" }] }).success,
    ).toBe(false);
    expect(SharedAgentMemory.safeParse({ code_language: "cobol" }).success).toBe(false);
    expect(SharedAgentMemory.safeParse({ data_visualizations: [{ data: { values: [] } }] }).success).toBe(false);
    expect(SharedAgentMemory.safeParse({ research_findings: x(LIMITS.maxTextChars + 1) }).success).toBe(false);
  });

  it("bounds its lists: sources to what the deepest research keeps, charts to the limit", () => {
    const src = { title: "t", url: null, path: "p", snippet: "" };
    expect(
      SharedAgentMemory.safeParse({ research_sources: Array(RESEARCH_DEPTHS.deep.sourcesKept).fill(src) }).success,
    ).toBe(true);
    expect(
      SharedAgentMemory.safeParse({ research_sources: Array(RESEARCH_DEPTHS.deep.sourcesKept + 1).fill(src) }).success,
    ).toBe(false);
    const chart = { mark: "point" };
    expect(
      SharedAgentMemory.safeParse({
        data_visualizations: Array(SUPERVISOR_LIMITS.maxNoteVisualizations + 1).fill(chart),
      }).success,
    ).toBe(false);
  });
});

describe("the supervisor's numbers", () => {
  it("budgets the shared notes at 8000 characters with 200 per field; chat 5 tool rounds, code 3", () => {
    expect(SUPERVISOR_LIMITS).toMatchObject({
      notesBudgetChars: 8000,
      notesMinFieldChars: 200,
      chatMaxToolIterations: 5,
      codeMaxIterations: 3,
    });
  });

  it("maps research depth to search iterations 1/3/5 and sources kept 5/10/20", () => {
    expect(ResearchDepth.options).toEqual(["quick", "standard", "deep"]);
    expect(RESEARCH_DEPTHS).toEqual({
      quick: { searchIterations: 1, sourcesKept: 5 },
      standard: { searchIterations: 3, sourcesKept: 10 },
      deep: { searchIterations: 5, sourcesKept: 20 },
    });
  });

  it("streams exactly the streamed nodes", () => {
    expect(STREAMING_CONFIG).toEqual({
      write: true,
      finalize: true,
      summarize: true,
      agent: true,
      generate: false,
      outline: false,
      synthesize: true,
      analyze: false,
      router: false,
      tools: false,
      search_agent: false,
      search_tools: false,
    });
  });

  it("runs code in the sandbox's two languages and draws Vega-Lite within the event's size", () => {
    expect(CodeLanguage.options).toEqual(["javascript", "python"]);
    const fits = { mark: "bar", description: x(LIMITS.maxVisualizationSpecChars - 31) };
    expect(VegaLiteSpec.safeParse(fits).success).toBe(true);
    expect(VegaLiteSpec.safeParse({ ...fits, description: `${fits.description}x` }).success).toBe(false);
  });
});

describe("attachments (SessionOptions.attachments)", () => {
  const file = (over: Partial<Attachment> = {}): Attachment => ({
    name: "sales.csv",
    content_type: "text/csv",
    content: "region,total\nA,5",
    ...over,
  });
  const refusal = (attachments: unknown): string => {
    const r = SessionOptions.safeParse({ attachments });
    return r.success ? "accepted" : JSON.stringify(r.error.issues.map((i) => [i.path.join("."), i.message]));
  };

  it("takes up to the limits: a name without a folder, a text type, text content", () => {
    expect(
      SessionOptions.parse({
        attachments: [
          file(),
          file({ name: "b.json", content_type: "application/json", content: "[]" }),
          file({ content_type: "text/plain", content: "" }),
        ],
      }).attachments,
    ).toHaveLength(3);
    const full = Array.from({ length: LIMITS.maxAttachments }, (_, i) =>
      file({ name: `f${i}.csv`, content: x(LIMITS.maxAttachmentChars / LIMITS.maxAttachments) }),
    );
    expect(refusal(full)).toBe("accepted");
    expect(refusal([file({ content: "a\tb\r\nc,d\n" })])).toBe("accepted");
  });

  it(`refuses more than ${LIMITS.maxAttachments} attachments, more than ${LIMITS.maxAttachmentChars} characters in all, and each field out of bounds, naming where`, () => {
    expect(refusal(Array.from({ length: LIMITS.maxAttachments + 1 }, () => file()))).toMatch(/"attachments"/);
    const over = [
      file({ content: x(LIMITS.maxAttachmentChars / 2) }),
      file({ content: x(LIMITS.maxAttachmentChars / 2 + 1) }),
    ];
    expect(refusal(over)).toContain(`over ${LIMITS.maxAttachmentChars} characters in all`);
    expect(refusal([file({ content: x(LIMITS.maxAttachmentChars + 1) })])).toContain("attachments.0.content");
    expect(refusal([file({ name: "../etc/passwd" })])).toContain("path separator");
    expect(refusal([file({ name: "dir\\a.csv" })])).toContain("path separator");
    expect(refusal([file({ name: "" })])).toContain("attachments.0.name");
    expect(refusal([file({ name: x(201) })])).toContain("attachments.0.name");
    expect(refusal([file({ content_type: "image/png" as Attachment["content_type"] })])).toContain(
      "attachments.0.content_type",
    );
    expect(refusal([file({ content: "a,b\u0000" })])).toContain("no control characters");
    expect(refusal([{ ...file(), path: "/tmp/x" }])).toContain("attachments.0");
    const euros = file({ content: "€".repeat(LIMITS.maxAttachmentChars) });
    expect(attachmentBytes(euros.content)).toBeGreaterThan(LIMITS.maxAttachmentBytes);
    expect(refusal([euros])).toContain(`over ${LIMITS.maxAttachmentBytes} bytes in all`);
  });

  it("DataInput says where data came from: an attachment (with its name), the query or the thread", () => {
    const data = { format: "csv", text: "a,b\n1,2", columns: ["a", "b"], rows: 1 } as const;
    expect(DataInput.parse({ ...data, origin: "attachment", name: "sales.csv" }).name).toBe("sales.csv");
    expect(DataInput.safeParse({ ...data, origin: "upload" }).success).toBe(false);
  });
});
