/**
 * `compiled(schema)`: zod's compiled parser for the schemas checked on every message and commit.
 * It must accept, return and reject exactly as the schema does; the workflow tests compare the two
 * on every state and outbox they make (packages/workflows/src/testing.ts, checkApplied).
 */
import {
  compiled,
  EventBatch,
  ExpertTurn,
  formatZodError,
  InboxInput,
  Outbox,
  ResearchTurn,
  SessionState,
  StepResult,
  TaskEnvelope,
  TransitionLogLine,
} from "@agentmesh/contracts";
import type { z } from "zod";
import { afterEach, describe, expect, it, vi } from "vitest";
import { testCommit, testSessionState } from "../../packages/session-store/src/fixtures.js";

const state = () => testSessionState("sess_compiled_01", 3) as unknown as Record<string, Record<string, unknown>>;

/** Both parses of `value`: the data or the formatted error, each. */
function both(schema: z.ZodType, value: unknown) {
  const show = (r: z.ZodSafeParseResult<unknown>) =>
    r.success ? { ok: JSON.stringify(r.data) } : { error: formatZodError(r.error) };
  return { plain: show(schema.safeParse(value)), fast: show(compiled(schema).safeParse(value)) };
}

describe("compiled schemas", () => {
  it("compiles a schema once per process and gives back the same parser", () => {
    expect(compiled(SessionState)).toBe(compiled(SessionState));
    expect(compiled(SessionState)).not.toBe(SessionState);
  });

  it("returns what the schema returns for a valid state, outbox and log line", () => {
    const commit = testCommit(testSessionState("sess_compiled_01", 3), "input-1");
    for (const [schema, value] of [
      [SessionState, commit.state],
      [Outbox, commit.outbox],
      [TransitionLogLine, commit.log],
    ] as const) {
      const r = both(schema, value);
      expect(r.fast).toEqual(r.plain);
      expect(r.plain).toHaveProperty("ok");
    }
  });

  it("drops unknown keys as the schema does, at the top and inside", () => {
    const s = state();
    const value = { ...s, extra: 1, meta: { ...s.meta, also: "x" } };
    const r = both(SessionState, value);
    expect(r.fast).toEqual(r.plain);
    expect(r.fast.ok).not.toContain("extra");
    expect(r.fast.ok).not.toContain("also");
  });

  it("rejects what the schema rejects, with the schema's own errors", () => {
    const s = state();
    const bad: unknown[] = [
      { ...s, meta: { ...s.meta, version: -1 } },
      { ...s, meta: { ...s.meta, status: "sleeping" } },
      { ...s, data: { ...s.data, workflow: "nope" } },
      { ...s, meta: { ...s.meta, session_id: "no spaces allowed" } },
      { meta: s.meta },
      null,
      "a string",
    ];
    for (const value of bad) {
      const r = both(SessionState, value);
      expect(r.plain).toHaveProperty("error");
      expect(r.fast).toEqual(r.plain);
    }
  });

  it("agrees on messages off the wire: a result input and a task, valid and not", () => {
    const result = {
      v: 1,
      kind: "result",
      session_id: "sess_compiled_01",
      input_id: "r:sess_compiled_01.3.0.1",
      task_id: "sess_compiled_01.3.0.1",
      role: "planner",
      op: "plan",
      outcome: {
        ok: true,
        output: { research_steps: ["a"], expert_steps: ["b"] },
        provenance: {
          role: "planner",
          op: "plan",
          model: "offline",
          tier: "fast",
          prompt_version: "v1",
          attempt: 1,
          usage: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 },
          latency_ms: 1,
        },
      },
    };
    const task = {
      v: 1,
      task_id: "sess_compiled_01.3.0.1",
      session_id: "sess_compiled_01",
      role: "planner",
      op: "plan",
      attempt: 1,
      deadline_at: null,
      input: { question: "q" },
    };
    const cases: Array<[z.ZodType, unknown]> = [
      [InboxInput, result],
      [InboxInput, { ...result, kind: "nonsense" }],
      [InboxInput, { ...result, outcome: { ok: false, error: { code: "no_such_code" }, provenance: null } }],
      [TaskEnvelope, task],
      [TaskEnvelope, { ...task, attempt: 1.5 }],
      [TaskEnvelope, { ...task, task_id: 7 }],
    ];
    for (const [schema, value] of cases) {
      const r = both(schema, value);
      expect(r.fast).toEqual(r.plain);
    }
    expect(both(InboxInput, result).plain).toHaveProperty("ok");
    expect(both(TaskEnvelope, { ...task, attempt: 1.5 }).plain).toHaveProperty("error");
    expect(both(TaskEnvelope, task).plain).toHaveProperty("ok");
  });
});

describe("compiled schemas with checks of their own (refine, superRefine, defaults)", () => {
  // each [schema, value, valid?]: the compiled parser must take the valid ones as the schema does
  // and turn the others away (a fast path that accepted one of them would return it unchecked)
  const event = (index: number, version = 4) => ({
    v: 1,
    session_id: "sess_compiled_01",
    version,
    index,
    timestamp: 1,
    type: "stage",
    name: "plan",
    description: "d",
    status: "running",
  });
  const step = {
    strategy: "tool",
    tool: "calculator",
    ok: true,
    output: "2",
    error: null,
    latency_ms: 1,
    attempts: 1,
    records: [],
    citations: [],
  };
  const cases: Array<[string, z.ZodType, unknown, boolean]> = [
    ["research turn, answer by default", ResearchTurn, { result: "found it" }, true],
    [
      "research turn, a tool call",
      ResearchTurn,
      { action: "tool", tool: "calculator", arguments_json: '{"expression":"1+1"}' },
      true,
    ],
    [
      "research turn, a tool call without a tool",
      ResearchTurn,
      { action: "tool", tool: " ", arguments_json: "{}" },
      false,
    ],
    [
      "expert turn, arguments not an object",
      ExpertTurn,
      { action: "tool", tool: "calculator", arguments_json: "[1]" },
      false,
    ],
    [
      "event batch in index order",
      EventBatch,
      { v: 1, session_id: "sess_compiled_01", version: 4, events: [event(0), event(1)] },
      true,
    ],
    [
      "event batch out of order",
      EventBatch,
      { v: 1, session_id: "sess_compiled_01", version: 4, events: [event(1), event(0)] },
      false,
    ],
    [
      "event batch of two versions",
      EventBatch,
      { v: 1, session_id: "sess_compiled_01", version: 4, events: [event(0), event(1, 5)] },
      false,
    ],
    ["step result, ok with output", StepResult, step, true],
    ["step result, ok without output", StepResult, { ...step, output: null }, false],
    ["step result, a failure without its error", StepResult, { ...step, ok: false }, false],
    ["step result, a citation missing its passage", StepResult, { ...step, citations: [{ path: "a.md" }] }, false],
  ];
  for (const [name, schema, value, valid] of cases) {
    it(`${valid ? "takes" : "refuses"} ${name}, as the schema does`, () => {
      const r = both(schema, value);
      expect(r.plain).toHaveProperty(valid ? "ok" : "error");
      expect(r.fast).toEqual(r.plain);
    });
  }
});

describe("compiled parsing on and off (AGENTMESH_ZOD_COMPILE)", () => {
  afterEach(async () => {
    vi.unstubAllEnvs();
    (await import("@agentmesh/contracts")).setCompiledParsing(true);
    vi.resetModules();
  });

  it("is on by default; off keeps every schema on zod's own parser, and on again compiles afresh", async () => {
    const c = await import("@agentmesh/contracts");
    const fast = c.compiled(SessionState);
    expect(fast).not.toBe(SessionState);
    c.setCompiledParsing(false);
    expect(c.compiled(SessionState)).toBe(SessionState);
    c.setCompiledParsing(true);
    expect(c.compiled(SessionState)).not.toBe(SessionState);
    expect(c.compiled(SessionState)).not.toBe(fast);
  });

  it("is not read from the environment by contracts", async () => {
    vi.stubEnv("AGENTMESH_ZOD_COMPILE", "off");
    vi.resetModules();
    const m = await import("../../packages/contracts/src/compiled.js");
    expect(m.compiled(SessionState)).not.toBe(SessionState);
  });

  it("is applied by every service's config as it is parsed, and refused unless it is on or off", async () => {
    const { loadCoordinatorConfig } = await import("../../services/coordinator/src/config.js");
    const { loadAgentConfig } = await import("../../packages/agent-kit/src/config.js");
    const { loadGatewayConfig } = await import("../../services/gateway/src/config.js");
    const { loadCliConfig } = await import("../../services/cli/src/config.js");
    const c = await import("@agentmesh/contracts");
    // the gateway needs a key or anonymous mode to start at all
    const base = { AGENTMESH_GATEWAY_ANONYMOUS: "1" };
    for (const load of [loadCoordinatorConfig, loadAgentConfig, loadGatewayConfig, loadCliConfig] as Array<
      (env: Record<string, string>) => unknown
    >) {
      expect(() => load({ ...base, AGENTMESH_ZOD_COMPILE: "0" }), load.name).toThrow(/AGENTMESH_ZOD_COMPILE/);
      expect(() => load({ ...base, AGENTMESH_ZOD_COMPILE: "off" }), load.name).not.toThrow();
      expect(c.compiled(SessionState), load.name).toBe(SessionState);
      load(base);
      expect(c.compiled(SessionState), load.name).not.toBe(SessionState);
    }
  });
});
