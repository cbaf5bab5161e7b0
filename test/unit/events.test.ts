import { describe, expect, test } from "vitest";
import { LIMITS, LOW_ROUTING_CONFIDENCE, SessionEvent, type SessionEventType } from "@agentmesh/contracts";

// The session event union (packages/contracts/src/events.ts): one valid example of every type,
// then what each type refuses. Contracts may import nothing but zod, so its test lives here.

const base = { v: 1, session_id: "sess_test_0001", version: 3, index: 0, at: 1_700_000_000_000 } as const;

/** One valid event of each type; the Record makes a new type without an example a compile error. */
const VALID: Record<SessionEventType, Record<string, unknown>> = {
  stage: { type: "stage", name: "planner", description: "Develop a logical plan", status: "running" },
  step: {
    type: "step",
    task_id: "sess_test_0001.3.0.0",
    summary: "planner.plan attempt 0: ok",
    provenance: {
      role: "planner",
      op: "plan",
      model: "scripted",
      tier: "standard",
      prompt_version: "v1",
      attempt: 0,
      usage: { prompt_tokens: 1, completion_tokens: 1, cost_usd: 0, model_calls: 1 },
      latency_ms: 3,
    },
  },
  token: { type: "token", task_id: "sess_test_0001.3.0.0", delta: "CRISPR" },
  tool_call: {
    type: "tool_call",
    id: "p1.s0.r0.tool",
    task_id: "sess_test_0001.3.0.0",
    tool: "calculator",
    args: { expression: "2 + 2" },
    args_truncated: false,
  },
  tool_result: {
    type: "tool_result",
    id: "p1.s0.r0.tool",
    tool: "calculator",
    ok: true,
    content: "4",
    latency_ms: 12.5,
  },
  error: { type: "error", code: "model_error", message: "the model failed", component: "planner" },
  complete: { type: "complete", status: "completed", final_answer: "4", final_reasoning_trace: "computed" },
  routing: { type: "routing", agent: "research", confidence: 0.42, reason: "needs sources", is_low_confidence: true },
  orchestration: {
    type: "orchestration",
    iteration: 2,
    layer: "answered",
    next_agent: "research",
    clarification_count: 1,
    max_clarifications: 2,
    reason: "the person answered",
  },
  config: {
    type: "config",
    agent: "research",
    settings: { depth: "quick", scenario: "news", sources_kept: 5, charted: false, model: null },
  },
  handoff: {
    type: "handoff",
    source_agent: "chat",
    target_agent: "code",
    task_description: "Run the numbers",
    context: null,
  },
  source: {
    type: "source",
    title: "JetStream",
    url: "https://docs.nats.io/nats-concepts/jetstream",
    path: null,
    snippet: "JetStream is the persistence layer",
  },
  code_result: {
    type: "code_result",
    id: "c1",
    language: "python",
    exit_code: 0,
    stdout: "4\n",
    stderr: "",
    result: "4",
    truncated: false,
    duration_ms: 31,
  },
  visualization: {
    type: "visualization",
    spec: { $schema: "https://vega.github.io/schema/vega-lite/v5.json", mark: "bar", data: { values: [{ a: 1 }] } },
  },
};

const parses = (type: SessionEventType, over: Record<string, unknown>) =>
  SessionEvent.safeParse({ ...base, ...VALID[type], ...over }).success;
const x = (n: number) => "x".repeat(n);
/** An object whose JSON is exactly `n` characters: {"k":"xxx…"}. */
const jsonOf = (n: number) => ({ k: x(n - 8) });

describe("every event type has a valid example", () => {
  test.each(Object.keys(VALID) as SessionEventType[])("%s", (type) => {
    expect(SessionEvent.parse({ ...base, ...VALID[type] })).toEqual({ ...base, ...VALID[type] });
  });
});

describe("stage: its shape", () => {
  test("status is running, completed or failed", () => {
    for (const status of ["running", "completed", "failed"]) expect(parses("stage", { status })).toBe(true);
    expect(parses("stage", { status: "started" })).toBe(false);
  });

  test("the old shape (stage, detail) is refused", () => {
    expect(
      SessionEvent.safeParse({ ...base, type: "stage", stage: "planner", status: "completed", detail: "done" }).success,
    ).toBe(false);
  });

  test("bounds: a name of 1-40 characters, a description of at most 2000", () => {
    expect(parses("stage", { name: x(40), description: x(2000) })).toBe(true);
    expect(parses("stage", { name: x(41) })).toBe(false);
    expect(parses("stage", { name: "" })).toBe(false);
    expect(parses("stage", { description: x(2001) })).toBe(false);
  });
});

describe("tool_call and tool_result", () => {
  test("args are an object of at most LIMITS.maxToolArgsChars characters of JSON", () => {
    expect(JSON.stringify(jsonOf(LIMITS.maxToolArgsChars)).length).toBe(LIMITS.maxToolArgsChars);
    expect(parses("tool_call", { args: jsonOf(LIMITS.maxToolArgsChars) })).toBe(true);
    expect(parses("tool_call", { args: jsonOf(LIMITS.maxToolArgsChars + 1) })).toBe(false);
    expect(parses("tool_call", { args: ["2 + 2"] })).toBe(false);
    expect(parses("tool_call", { args: "2 + 2" })).toBe(false);
  });

  test("a call needs its id, its task and the truncation marker", () => {
    expect(parses("tool_call", { id: "" })).toBe(false);
    expect(parses("tool_call", { id: x(201) })).toBe(false);
    expect(parses("tool_call", { args_truncated: undefined })).toBe(false);
    expect(parses("tool_call", { task_id: undefined })).toBe(false);
  });

  test("a result's content is a preview of at most 500 characters", () => {
    expect(LIMITS.toolResultPreviewChars).toBe(500);
    expect(parses("tool_result", { content: x(500) })).toBe(true);
    expect(parses("tool_result", { content: x(501) })).toBe(false);
  });

  test("a result needs its id, ok and a latency that is not negative", () => {
    expect(parses("tool_result", { id: undefined })).toBe(false);
    expect(parses("tool_result", { ok: "yes" })).toBe(false);
    expect(parses("tool_result", { latency_ms: -1 })).toBe(false);
    expect(parses("tool_result", { tool: x(81) })).toBe(false);
  });
});

describe("routing", () => {
  test("the agent is one of the supervisor's five", () => {
    for (const agent of ["chat", "research", "code", "writing", "data"])
      expect(parses("routing", { agent, confidence: 0.9, is_low_confidence: false })).toBe(true);
    expect(parses("routing", { agent: "sales" })).toBe(false);
  });

  test(`is_low_confidence says whether the confidence is under ${LOW_ROUTING_CONFIDENCE}`, () => {
    expect(parses("routing", { confidence: 0.5, is_low_confidence: false })).toBe(true);
    expect(parses("routing", { confidence: 0.49, is_low_confidence: true })).toBe(true);
    expect(parses("routing", { confidence: 0.49, is_low_confidence: false })).toBe(false);
    expect(parses("routing", { confidence: 0.9, is_low_confidence: true })).toBe(false);
  });

  test("bounds: confidence in [0, 1], a reason of at most 1000 characters", () => {
    expect(parses("routing", { confidence: 1.2, is_low_confidence: false })).toBe(false);
    expect(parses("routing", { confidence: -0.1 })).toBe(false);
    expect(parses("routing", { reason: x(1001) })).toBe(false);
  });
});

describe("orchestration (orchestrator runs)", () => {
  test("routes to clarification or research, from one of the four layers", () => {
    expect(parses("orchestration", { next_agent: "clarification", layer: "model" })).toBe(true);
    expect(parses("orchestration", { next_agent: "end" })).toBe(false);
    expect(parses("orchestration", { layer: "guess" })).toBe(false);
  });

  test("the count and the cap are whole numbers, not negative; the iteration starts at 1; the reason at most 4000 characters", () => {
    expect(parses("orchestration", { clarification_count: -1 })).toBe(false);
    expect(parses("orchestration", { max_clarifications: 1.5 })).toBe(false);
    expect(parses("orchestration", { iteration: 0 })).toBe(false);
    expect(parses("orchestration", { reason: x(4000) })).toBe(true);
    expect(parses("orchestration", { reason: x(4001) })).toBe(false);
  });
});

describe("handoff (HandoffInfo)", () => {
  test("between two different supervisor agents, with a task", () => {
    expect(parses("handoff", { context: "the findings so far" })).toBe(true);
    expect(parses("handoff", { target_agent: "chat" })).toBe(false);
    expect(parses("handoff", { target_agent: "billing" })).toBe(false);
    expect(parses("handoff", { task_description: "" })).toBe(false);
  });

  test("bounds: task description and context of at most 2000 characters", () => {
    expect(parses("handoff", { task_description: x(2000), context: x(2000) })).toBe(true);
    expect(parses("handoff", { task_description: x(2001) })).toBe(false);
    expect(parses("handoff", { context: x(2001) })).toBe(false);
  });
});

describe("config (init_config)", () => {
  test("names one of the supervisor's agents and carries flat settings", () => {
    expect(parses("config", { agent: "code", settings: { max_iterations: 3, languages: "python, javascript" } })).toBe(
      true,
    );
    expect(parses("config", { agent: "billing" })).toBe(false);
    expect(parses("config", { settings: { nested: { depth: "quick" } } })).toBe(false);
    expect(parses("config", { settings: { list: ["a"] } })).toBe(false);
  });

  test("bounds: at most 20 settings, values of at most 200 characters", () => {
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i]));
    expect(parses("config", { settings: twenty })).toBe(true);
    expect(parses("config", { settings: { ...twenty, k20: 20 } })).toBe(false);
    expect(parses("config", { settings: { note: x(200) } })).toBe(true);
    expect(parses("config", { settings: { note: x(201) } })).toBe(false);
  });
});

describe("source", () => {
  test("a web page (url) or a corpus file (path), never neither", () => {
    expect(parses("source", { url: null, path: "corpus/jetstream.md" })).toBe(true);
    expect(parses("source", { url: null, path: null })).toBe(false);
    expect(parses("source", { url: "not a url" })).toBe(false);
  });

  test("bounds: title 1-300, snippet at most 500 characters", () => {
    expect(parses("source", { title: "" })).toBe(false);
    expect(parses("source", { title: x(301) })).toBe(false);
    expect(parses("source", { snippet: x(500) })).toBe(true);
    expect(parses("source", { snippet: x(501) })).toBe(false);
  });
});

describe("code_result", () => {
  test("a limit that stopped the code has no exit code; the language is javascript or python", () => {
    expect(parses("code_result", { exit_code: null, language: "javascript" })).toBe(true);
    expect(parses("code_result", { exit_code: 1.5 })).toBe(false);
    expect(parses("code_result", { language: "ruby" })).toBe(false);
    expect(parses("code_result", { id: undefined })).toBe(false);
  });

  test("bounds: stdout and stderr each at most LIMITS.maxCodeOutputChars, the result at most 2000", () => {
    const max = LIMITS.maxCodeOutputChars;
    expect(parses("code_result", { stdout: x(max), stderr: x(max), result: x(2000) })).toBe(true);
    expect(parses("code_result", { stdout: x(max + 1) })).toBe(false);
    expect(parses("code_result", { stderr: x(max + 1) })).toBe(false);
    expect(parses("code_result", { result: x(2001) })).toBe(false);
    expect(parses("code_result", { duration_ms: -1 })).toBe(false);
  });
});

describe("visualization", () => {
  test("the spec is a Vega-Lite object: a mark or a composition", () => {
    expect(parses("visualization", { spec: { layer: [] } })).toBe(true);
    expect(parses("visualization", { spec: { data: { values: [] } } })).toBe(false);
    expect(parses("visualization", { spec: [] })).toBe(false);
    expect(parses("visualization", { spec: "bar chart" })).toBe(false);
  });

  test("bounds: at most LIMITS.maxVisualizationSpecChars characters of JSON", () => {
    const fits = { mark: "bar", description: x(LIMITS.maxVisualizationSpecChars - 31) };
    expect(JSON.stringify(fits).length).toBe(LIMITS.maxVisualizationSpecChars);
    expect(parses("visualization", { spec: fits })).toBe(true);
    expect(parses("visualization", { spec: { ...fits, description: `${fits.description}x` } })).toBe(false);
  });
});

test("an unknown type is refused", () => {
  expect(SessionEvent.safeParse({ ...base, type: "settings", data: {} }).success).toBe(false);
});
