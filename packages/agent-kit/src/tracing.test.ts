import { describe, expect, it } from "vitest";
import { ZERO_USAGE } from "@agentmesh/contracts";
import type { ModelPort, ModelRequest } from "@agentmesh/llm";
import { createLogger } from "@agentmesh/service-kit";
import { createRecordingTracing } from "@agentmesh/service-kit/testing";
import { createOpRunner, genAiSystem } from "./agent.js";
import { defineAgent } from "./definition.js";
import type { PromptContract } from "./prompts.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = new Map<string, PromptContract>([
  ["perception.perceive", { id: "perception.perceive", version: 1, focus: "Read.", system: "Read." }],
]);
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
const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const task = {
  task_id: "sess00000001.3.0.1",
  session_id: "sess00000001",
  role: "perception",
  op: "perceive",
  attempt: 1,
  input: { kind: "query", query: "What now?" },
};

const model: ModelPort = {
  name: "openai-compatible http://127.0.0.1:1/v1",
  async complete<T>(req: ModelRequest<T>) {
    if (req.mode === "text") throw new Error("schema requests only");
    return {
      output: req.schema.parse(SNAPSHOT),
      usage: { ...ZERO_USAGE, prompt_tokens: 120, completion_tokens: 30, cost_usd: 0.0021, model_calls: 1 },
      model: "gpt-test",
      tier: "standard" as const,
      latencyMs: 2,
      temperature: 0.3,
    };
  },
};

const agent = defineAgent({
  role: "perception",
  description: "test",
  ops: {
    perceive: {
      contract: "perception.perceive",
      render: (i) => `Q: ${i.query}`,
      summarize: (o) => o.intent,
      // the decision-record hook: attributes from the op's input and output
      spanAttributes: (i, o) => ({ "orchestrator_decision.input": i.query, "orchestrator_decision.output": o.intent }),
    },
  },
});

describe("task spans", () => {
  it("a task span continues the task's traceparent; its model call is a child span with the GenAI attributes", async () => {
    const tracing = createRecordingTracing("perception");
    const run = createOpRunner(agent, model, { log, prompts, tracing });
    const outcome = await run(task, new AbortController().signal, { traceparent: PARENT, threadId: "thread000001" });
    expect(outcome.ok).toBe(true);
    const spans = tracing.spans();
    const t = spans.find((s) => s.name === "task")!;
    const m = spans.find((s) => s.name === "model_call")!;
    expect(t).toMatchObject({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      parentSpanId: "00f067aa0ba902b7",
      failed: false,
    });
    expect(t.attributes).toMatchObject({
      "agentmesh.session_id": "sess00000001",
      "langfuse.session.id": "thread000001",
      "agentmesh.role": "perception",
      "agentmesh.op": "perceive",
      "agentmesh.task_id": task.task_id,
      "agentmesh.attempt": 1,
      "agentmesh.ok": true,
      "orchestrator_decision.input": "What now?",
      "orchestrator_decision.output": "other",
    });
    expect(m).toMatchObject({ traceId: t.traceId, parentSpanId: t.spanId });
    expect(m.attributes).toMatchObject({
      "gen_ai.system": "openai",
      "gen_ai.request.model": "gpt-test",
      "gen_ai.request.temperature": 0.3,
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
      "agentmesh.cost_usd": 0.0021,
      "agentmesh.session_id": "sess00000001",
    });
  });

  it("a handler's annotate and span land on the task's span and under it; a typed failure marks the task failed", async () => {
    const tracing = createRecordingTracing("memory");
    const failing = defineAgent({
      role: "perception",
      description: "test",
      ops: {
        perceive: {
          kind: "handler",
          version: "h1",
          summarize: () => "s",
          run: async (_input, ctx) => {
            ctx.annotate({ "agentmesh.note": "annotated" });
            await ctx.span("tool_call", { "gen_ai.tool.name": "calculator" }, async (s) =>
              s.setAttributes({ "agentmesh.ok": true }),
            );
            throw new Error("boom");
          },
        },
      },
    });
    const outcome = await createOpRunner(failing, model, { log, prompts, tracing })(
      task,
      new AbortController().signal,
      { traceparent: PARENT },
    );
    expect(outcome.ok).toBe(false);
    const spans = tracing.spans();
    const t = spans.find((s) => s.name === "task")!;
    expect(t).toMatchObject({
      failed: true,
      attributes: { "agentmesh.note": "annotated", "agentmesh.ok": false, "agentmesh.error_code": "internal" },
    });
    expect(spans.find((s) => s.name === "tool_call")).toMatchObject({
      parentSpanId: t.spanId,
      attributes: { "gen_ai.tool.name": "calculator", "agentmesh.ok": true, "agentmesh.session_id": "sess00000001" },
    });
  });

  it("names the GenAI system after the model port", () => {
    expect(genAiSystem("openai-compatible http://x/v1")).toBe("openai");
    expect(genAiSystem("offline")).toBe("offline");
    expect(genAiSystem("scripted")).toBe("scripted");
  });
});
