import { describe, expect, it } from "vitest";
import { AgentmeshError, EMPTY_MEMORY, ZERO_USAGE, type OpRequest } from "@agentmesh/contracts";
import type { ModelPort, ModelRequest } from "@agentmesh/llm";
import { createLogger } from "@agentmesh/service-kit";
import { checkContracts, createOpRunner } from "./agent.js";
import { defineAgent, type HandlerContext } from "./definition.js";
import type { PromptContract } from "./prompts.js";

const log = createLogger({ service: "test", level: "silent" });
const contracts = new Map<string, PromptContract>([
  [
    "perception.perceive",
    { id: "perception.perceive", version: 3, focus: "Read text.", system: "CONTRACT: read, never act." },
  ],
  ["memory.update", { id: "memory.update", version: 2, focus: "Fold.", system: "CONTRACT: fold." }],
]);

/** A model port that records its requests and answers with `answer`. */
function recordingModel(
  answer: (req: ModelRequest<unknown>) => unknown,
): ModelPort & { calls: ModelRequest<unknown>[] } {
  const calls: ModelRequest<unknown>[] = [];
  return {
    name: "recording",
    calls,
    async complete<T>(req: ModelRequest<T>) {
      calls.push(req as ModelRequest<unknown>);
      if (req.mode === "text") throw new Error("the recording model answers schema requests only");
      return {
        output: req.schema.parse(answer(req as ModelRequest<unknown>)),
        usage: { ...ZERO_USAGE, prompt_tokens: 10, completion_tokens: 5, model_calls: 1 },
        model: "m1",
        tier: "standard" as const,
        latencyMs: 2,
      };
    },
  };
}

const SNAPSHOT = {
  entities: [],
  intent: "other",
  constraints: [],
  sub_goals: [],
  confidence: 0.5,
  suspicious_patterns: [],
  goal_satisfied: null,
  notes: "",
};
const memoryInput: OpRequest<"memory", "update"> = {
  question: "What now?",
  memory: EMPTY_MEMORY,
  event: { kind: "user_reply", question_for_human: "Which?", text: "That one" },
};
const task = (role: string, op: string, input: unknown) => ({
  task_id: "sess00000001.3.0.1",
  session_id: "sess00000001",
  role,
  op,
  attempt: 1,
  input,
});

const perceptionAgent = defineAgent({
  role: "perception",
  description: "test",
  ops: {
    perceive: {
      contract: "perception.perceive",
      system: "OWN RULES",
      render: (i) => `Q: ${i.query}`,
      summarize: (o) => o.intent,
    },
  },
});

describe("prompt ops", () => {
  it("prepend the prompt contract to their own instructions and record the contract's version", async () => {
    const model = recordingModel(() => SNAPSHOT);
    const run = createOpRunner(perceptionAgent, model, { log, prompts: contracts });
    const out = await run(
      task("perception", "perceive", { kind: "query", query: "What now?" }),
      new AbortController().signal,
    );
    expect(model.calls[0]?.system).toBe("CONTRACT: read, never act.\n\nOWN RULES");
    expect(model.calls[0]?.prompt).toBe("Q: What now?");
    expect(out).toMatchObject({
      ok: true,
      provenance: { model: "m1", prompt_version: "perception.perceive/v3", attempt: 1, usage: { model_calls: 1 } },
    });
  });

  it("refuse to start when a contract they name is missing", () => {
    expect(() => checkContracts(perceptionAgent, new Map())).toThrow(/perception.perceive/);
  });
});

describe("handler ops", () => {
  const handlerAgent = (run: (input: OpRequest<"memory", "update">, ctx: HandlerContext) => Promise<unknown>) =>
    defineAgent({
      role: "memory",
      description: "test",
      ops: {
        update: {
          kind: "handler",
          version: "fold-9",
          contract: "memory.update",
          run: run as never,
          summarize: () => "s",
        },
      },
    });

  it("run without a model, get the task's ids and the contract, and report provenance with no model", async () => {
    const model = recordingModel(() => ({}));
    let seen: { sessionId: string; taskId: string; attempt: number; prompt: string | undefined } | null = null;
    const agent = handlerAgent(async (input, ctx) => {
      seen = { sessionId: ctx.sessionId, taskId: ctx.taskId, attempt: ctx.attempt, prompt: ctx.prompt?.system };
      return { ...input.memory, long_term_refs: ["ref"] };
    });
    const out = await createOpRunner(agent, model, { log, prompts: contracts })(
      task("memory", "update", memoryInput),
      new AbortController().signal,
    );
    expect(seen).toEqual({
      sessionId: "sess00000001",
      taskId: "sess00000001.3.0.1",
      attempt: 1,
      prompt: "CONTRACT: fold.",
    });
    expect(model.calls).toHaveLength(0);
    expect(out).toMatchObject({
      ok: true,
      output: { long_term_refs: ["ref"] },
      provenance: { model: "none", prompt_version: "memory.update/v2", usage: ZERO_USAGE },
    });
  });

  it("may call the model; its usage and name land in the provenance", async () => {
    const model = recordingModel((req) => ({ note: `seen ${String((req.input as { question: string }).question)}` }));
    const { z } = await import("zod");
    const agent = handlerAgent(async (input, ctx) => {
      const r = await ctx.complete({ schema: z.object({ note: z.string() }), schemaName: "note", prompt: "note it" });
      return { ...input.memory, long_term_refs: [r.note] };
    });
    const out = await createOpRunner(agent, model, { log, prompts: contracts })(
      task("memory", "update", memoryInput),
      new AbortController().signal,
    );
    expect(model.calls[0]).toMatchObject({
      role: "memory",
      op: "update",
      system: "CONTRACT: fold.",
      prompt: "note it",
    });
    expect(out).toMatchObject({
      ok: true,
      output: { long_term_refs: ["seen What now?"] },
      provenance: { model: "m1", usage: { prompt_tokens: 10 } },
    });
  });

  it("choose the model call's output mode and temperature; by default structured at the configured temperature", async () => {
    const model = recordingModel(() => ({ note: "n" }));
    const { z } = await import("zod");
    const agent = handlerAgent(async (input, ctx) => {
      await ctx.complete({
        schema: z.object({ note: z.string() }),
        schemaName: "note",
        prompt: "once",
        mode: "json_object",
        temperature: 0,
      });
      await ctx.complete({ schema: z.object({ note: z.string() }), schemaName: "note", prompt: "default" });
      return input.memory;
    });
    const out = await createOpRunner(agent, model, { log, prompts: contracts })(
      task("memory", "update", memoryInput),
      new AbortController().signal,
    );
    expect(out.ok).toBe(true);
    expect(model.calls.map((c) => ({ mode: c.mode, temperature: c.temperature }))).toEqual([
      { mode: "json_object", temperature: 0 },
      { mode: "structured", temperature: undefined },
    ]);
    expect(Object.hasOwn(model.calls[1]!, "temperature")).toBe(false);
  });

  it("have their output validated against the contracts' response schema", async () => {
    const agent = handlerAgent(async () => ({ short_term: "not a list" }));
    const out = await createOpRunner(
      agent,
      recordingModel(() => ({})),
      { log, prompts: contracts },
    )(task("memory", "update", memoryInput), new AbortController().signal);
    expect(out).toMatchObject({ ok: false, error: { code: "internal", retryable: false } });
  });

  it("turn thrown typed errors into typed failures, retryable per code; anything else is a bug", async () => {
    const cases: Array<[() => never, { code: string; retryable: boolean; message?: string }]> = [
      [
        () => {
          throw new AgentmeshError("tool_error", "search down");
        },
        { code: "tool_error", retryable: true },
      ],
      [
        () => {
          throw new AgentmeshError("tool_error", "bad index", { retryable: false });
        },
        { code: "tool_error", retryable: false },
      ],
      [
        () => {
          throw new AgentmeshError("needs_model", "no model");
        },
        { code: "needs_model", retryable: false },
      ],
      [
        () => {
          throw new AgentmeshError("timeout", "slow");
        },
        { code: "timeout", retryable: true },
      ],
      [
        () => {
          throw new TypeError("x is undefined");
        },
        { code: "internal", retryable: false, message: "bug in memory.update: x is undefined" },
      ],
    ];
    for (const [thrower, expected] of cases) {
      const agent = handlerAgent(async () => thrower());
      const out = await createOpRunner(
        agent,
        recordingModel(() => ({})),
        { log, prompts: contracts },
      )(task("memory", "update", memoryInput), new AbortController().signal);
      expect(out).toMatchObject({ ok: false, error: { ...expected, component: "memory" } });
    }
  });

  it("refuse an input that fails the request schema, and an op the role does not have", async () => {
    const agent = handlerAgent(async (i) => i.memory);
    const run = createOpRunner(
      agent,
      recordingModel(() => ({})),
      { log, prompts: contracts },
    );
    expect(await run(task("memory", "update", { question: "x" }), new AbortController().signal)).toMatchObject({
      ok: false,
      error: { code: "invalid_message" },
    });
    expect(await run(task("memory", "forget", memoryInput), new AbortController().signal)).toMatchObject({
      ok: false,
      error: { code: "unknown_op" },
    });
  });
});
