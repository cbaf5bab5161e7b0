import { describe, expect, test } from "vitest";
import { SessionEvent, type SessionEventType } from "@agentmesh/contracts";
import { renderEvent } from "./render.js";

const base = { v: 1, session_id: "sess_test_0001", version: 3, index: 0, timestamp: 1_700_000_000_000 } as const;
const ev = (e: Record<string, unknown>): SessionEvent => SessionEvent.parse({ ...base, ...e });

/** Events of every type (the Record makes a type without examples a compile error), and the line each renders to. */
const CASES: Record<SessionEventType, Array<{ event: SessionEvent; quiet: string | null; verbose: string | null }>> = {
  stage: [
    {
      event: ev({ type: "stage", name: "planner", status: "running", description: "Develop a plan" }),
      quiet: "  … planning",
      verbose: "  … planning (Develop a plan)",
    },
    {
      event: ev({ type: "stage", name: "critic", status: "completed", description: "acceptable" }),
      quiet: "  ✓ critic: acceptable",
      verbose: "  ✓ critic: acceptable",
    },
    {
      event: ev({
        type: "stage",
        name: "researcher",
        status: "failed",
        description: "failed (model_error: boom); retries 1/5",
      }),
      quiet: "  ✗ researcher: failed (model_error: boom); retries 1/5",
      verbose: "  ✗ researcher: failed (model_error: boom); retries 1/5",
    },
    {
      event: ev({ type: "stage", name: "executor", status: "failed", description: "" }),
      quiet: "  ✗ executor failed",
      verbose: "  ✗ executor failed",
    },
    {
      event: ev({ type: "stage", name: "awaiting_user", status: "running", description: "Which aspect do you mean?" }),
      quiet: '  ? Which aspect do you mean? (answer: agentmesh answer sess_test_0001 "…")',
      verbose: '  ? Which aspect do you mean? (answer: agentmesh answer sess_test_0001 "…")',
    },
  ],
  step: [
    {
      event: ev({
        type: "step",
        task_id: "t1",
        summary: "planner.plan attempt 0: ok",
        provenance: {
          role: "planner",
          op: "plan",
          model: "scripted",
          tier: "standard",
          prompt_version: "v1",
          attempt: 0,
          usage: { prompt_tokens: 10, completion_tokens: 5, cost_usd: 0, model_calls: 1 },
          latency_ms: 3.4,
        },
      }),
      quiet: null,
      verbose: "    planner.plan attempt 0 via scripted (standard), 10+5 tokens, 3 ms",
    },
  ],
  token: [{ event: ev({ type: "token", task_id: "t1", delta: "CRISPR" }), quiet: null, verbose: null }],
  tool_call: [
    {
      event: ev({
        type: "tool_call",
        id: "p1.s0.r0.tool",
        task_id: "t1",
        tool: "calculator",
        args: { expression: "2 + 2" },
        args_truncated: false,
      }),
      quiet: null,
      verbose: '    tool calculator {"expression":"2 + 2"}',
    },
    {
      event: ev({
        type: "tool_call",
        id: "c2",
        task_id: "t1",
        tool: "run_python",
        args: { code: "x".repeat(300) },
        args_truncated: true,
      }),
      quiet: null,
      verbose: `    tool run_python {"code":"${"x".repeat(60)}… (cut)`,
    },
  ],
  tool_result: [
    {
      event: ev({ type: "tool_result", id: "c1", tool: "calculator", ok: true, content: "4", latency_ms: 12.4 }),
      quiet: null,
      verbose: "    tool calculator ok in 12 ms: 4",
    },
    {
      event: ev({ type: "tool_result", id: "c2", tool: "web_search", ok: false, content: "", latency_ms: 3000 }),
      quiet: null,
      verbose: "    tool web_search failed in 3000 ms",
    },
  ],
  error: [
    {
      event: ev({ type: "error", code: "model_error", message: "the model failed", component: "planner" }),
      quiet: "  ✗ planner: the model failed [model_error]",
      verbose: "  ✗ planner: the model failed [model_error]",
    },
  ],
  complete: [
    {
      event: ev({ type: "complete", status: "completed", final_answer: "4", final_reasoning_trace: "t" }),
      quiet: null,
      verbose: null,
    },
  ],
  routing: [
    {
      event: ev({
        type: "routing",
        agent: "research",
        confidence: 0.42,
        reason: "needs sources",
        is_low_confidence: true,
      }),
      quiet: "  → research agent (confidence 0.42, low): needs sources",
      verbose: "  → research agent (confidence 0.42, low): needs sources",
    },
    {
      event: ev({ type: "routing", agent: "chat", confidence: 1, reason: "", is_low_confidence: false }),
      quiet: "  → chat agent (confidence 1)",
      verbose: "  → chat agent (confidence 1)",
    },
  ],
  orchestration: [
    {
      event: ev({
        type: "orchestration",
        iteration: 1,
        layer: "model",
        next_agent: "clarification",
        clarification_count: 1,
        max_clarifications: 2,
        reason: "Decision: CLARIFICATION",
      }),
      quiet: "  → clarification (orchestrator model, clarifications 1/2)",
      verbose: "  → clarification (orchestrator model, clarifications 1/2): Decision: CLARIFICATION",
    },
  ],
  config: [
    {
      event: ev({
        type: "config",
        agent: "research",
        settings: { depth: "quick", scenario: "academic", search_iterations: 1, sources_kept: 5 },
      }),
      quiet: null,
      verbose: "    research agent settings: depth=quick, scenario=academic, search_iterations=1, sources_kept=5",
    },
    {
      event: ev({ type: "config", agent: "chat", settings: {} }),
      quiet: null,
      verbose: "    chat agent settings: defaults",
    },
  ],
  handoff: [
    {
      event: ev({
        type: "handoff",
        source_agent: "chat",
        target_agent: "code",
        task_description: "Run the numbers\nin Python",
        context: null,
      }),
      quiet: "  → handoff chat → code: Run the numbers",
      verbose: "  → handoff chat → code: Run the numbers",
    },
  ],
  handoff_refused: [
    {
      event: ev({ type: "handoff_refused", from: "research", to: "chat", reason: "matrix" }),
      quiet: "  ✗ handoff research → chat refused (not allowed by the handoff matrix)",
      verbose: "  ✗ handoff research → chat refused (not allowed by the handoff matrix)",
    },
    {
      event: ev({ type: "handoff_refused", from: "data", to: "code", reason: "ping_pong" }),
      quiet: "  ✗ handoff data → code refused (straight back to the agent that handed it over)",
      verbose: "  ✗ handoff data → code refused (straight back to the agent that handed it over)",
    },
    {
      event: ev({ type: "handoff_refused", from: "code", to: "data", reason: "cap" }),
      quiet: "  ✗ handoff code → data refused (the session's handoffs are used up)",
      verbose: "  ✗ handoff code → data refused (the session's handoffs are used up)",
    },
  ],
  source: [
    {
      event: ev({
        type: "source",
        title: "JetStream",
        url: "https://docs.nats.io/jetstream",
        path: null,
        snippet: "persistence",
      }),
      quiet: "    source: JetStream (https://docs.nats.io/jetstream)",
      verbose: "    source: JetStream (https://docs.nats.io/jetstream)",
    },
    {
      event: ev({
        type: "source",
        title: "Redis persistence",
        url: null,
        path: "corpus/redis-persistence.md",
        snippet: "",
      }),
      quiet: "    source: Redis persistence (corpus/redis-persistence.md)",
      verbose: "    source: Redis persistence (corpus/redis-persistence.md)",
    },
  ],
  code_result: [
    {
      event: ev({
        type: "code_result",
        id: "c3",
        language: "python",
        exit_code: 0,
        stdout: "4\n",
        stderr: "",
        result: "4",
        truncated: false,
        duration_ms: 31.2,
      }),
      quiet: "    python ran: exit 0, 31 ms",
      verbose: "    python ran: exit 0, 31 ms: 4",
    },
    {
      event: ev({
        type: "code_result",
        id: "c4",
        language: "javascript",
        exit_code: null,
        stdout: "",
        stderr: "",
        result: null,
        truncated: false,
        duration_ms: 5000,
      }),
      quiet: "    javascript ran: stopped by a limit, 5000 ms",
      verbose: "    javascript ran: stopped by a limit, 5000 ms",
    },
  ],
  visualization: [
    {
      event: ev({ type: "visualization", spec: { title: "Sales by month", mark: "bar", data: { values: [] } } }),
      quiet: '    chart "Sales by month" (Vega-Lite; --json prints the spec)',
      verbose: '    chart "Sales by month" (Vega-Lite; --json prints the spec)',
    },
    {
      event: ev({ type: "visualization", spec: { layer: [] } }),
      quiet: '    chart "untitled" (Vega-Lite; --json prints the spec)',
      verbose: '    chart "untitled" (Vega-Lite; --json prints the spec)',
    },
  ],
};

describe("renderEvent: one line (or nothing) for every event type", () => {
  const all = Object.entries(CASES).flatMap(([type, cases]) => cases.map((c, i) => [`${type} #${i + 1}`, c] as const));

  test.each(all)("%s", (_name, c) => {
    expect(renderEvent(c.event, false)).toBe(c.quiet);
    expect(renderEvent(c.event, true)).toBe(c.verbose);
  });

  test("no line spans two terminal lines, whatever the model wrote", () => {
    for (const [, c] of all) {
      for (const verbose of [false, true]) expect(renderEvent(c.event, verbose) ?? "").not.toContain("\n");
    }
  });
});
