import { afterEach, describe, expect, it } from "vitest";
import { ROLES } from "@agentmesh/contracts";
import { createOpenAIModel, maxModelRequestsPerCall, type OpenAIModelOptions } from "./openai.js";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "./scripted-server.js";
import type { JsonObjectRequest, StructuredRequest } from "./types.js";

const PLAN = { research_steps: ["Find the definition"], expert_steps: ["Define it"] };
const planSchema = ROLES.planner.plan.response;
type Plan = typeof PLAN;

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(script: HttpScriptEntry[], opts: Partial<OpenAIModelOptions> = {}, rejectJsonSchema = false) {
  server = await startScriptedOpenAIServer({ script, host: "127.0.0.1", port: 0, rejectJsonSchema });
  const sleeps: number[] = [];
  const model = createOpenAIModel({
    baseURL: server.url,
    roles: { expert: { model: "m-strong", temperature: 0.2, tier: "strong" } },
    defaultRole: { model: "m-fast", temperature: 0, tier: "fast" },
    timeoutMs: 5_000,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    ...opts,
  });
  return { model, sleeps, server };
}

const request = (taskId: string, extra: Partial<StructuredRequest<Plan>> = {}): StructuredRequest<Plan> => ({
  role: "planner",
  op: "plan",
  taskId,
  system: "You plan.",
  prompt: "Plan: What is CRISPR?",
  input: {},
  schema: planSchema,
  schemaName: "plan",
  ...extra,
});

describe("OpenAI-compatible adapter: structured output", () => {
  it("sends a strict json_schema response_format with the agentmesh headers", async () => {
    const { model, server } = await setup([
      { role: "planner", op: "plan", output: PLAN, usage: { prompt_tokens: 11, completion_tokens: 7 } },
    ]);
    const reply = await model.complete(request("s1.1.0.0"));
    expect(reply.output).toEqual(PLAN);
    expect(reply).toMatchObject({
      model: "m-fast",
      tier: "fast",
      usage: { prompt_tokens: 11, completion_tokens: 7, cost_usd: 0, model_calls: 1 },
    });
    expect(server.calls).toHaveLength(1);
    // role, op and taskId are read from the x-agentmesh-* headers.
    expect(server.calls[0]).toMatchObject({
      role: "planner",
      op: "plan",
      taskId: "s1.1.0.0",
      turn: 0,
      stream: false,
      responseFormat: "json_schema",
    });
    expect(server.calls[0]!.body).toMatchObject({
      model: "m-fast",
      temperature: 0,
      messages: [
        { role: "system", content: "You plan." },
        { role: "user", content: "Plan: What is CRISPR?" },
      ],
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "plan",
          strict: true,
          schema: { type: "object", required: ["research_steps", "expert_steps"], additionalProperties: false },
        },
      },
    });
    server.assertConsumed();
  });

  it("uses the role's model, temperature and tier", async () => {
    const { model, server } = await setup([
      { role: "expert", op: "answer", output: { expert_answer: "a", expert_reasoning: "r" } },
    ]);
    const reply = await model.complete({
      ...request("t"),
      role: "expert",
      op: "answer",
      schema: ROLES.expert.answer.response,
    } as StructuredRequest<unknown>);
    expect(reply).toMatchObject({ model: "m-strong", tier: "strong" });
    expect(server.calls[0]!.body).toMatchObject({ model: "m-strong", temperature: 0.2 });
  });

  it("prefers a `<role>.<op>` entry over the role's, and the role's over the default", async () => {
    const roles = {
      planner: { model: "m-standard", temperature: 0.5, tier: "standard" as const },
      "planner.capabilities": { model: "m-mini", temperature: 0.1, tier: "fast" as const },
    };
    const { model, server } = await setup(
      [
        { role: "planner", op: "capabilities", output: PLAN },
        { role: "planner", op: "plan", output: PLAN },
        { role: "critic", op: "review_plan", output: PLAN },
      ],
      { roles },
    );
    const replies = [
      await model.complete(request("t1", { op: "capabilities" })),
      await model.complete(request("t2")),
      await model.complete(request("t3", { role: "critic", op: "review_plan" })),
    ];
    expect(replies.map((r) => [r.model, r.tier])).toEqual([
      ["m-mini", "fast"],
      ["m-standard", "standard"],
      ["m-fast", "fast"],
    ]);
    expect(server.calls.map((c) => c.body as { model: string; temperature: number })).toMatchObject([
      { model: "m-mini", temperature: 0.1 },
      { model: "m-standard", temperature: 0.5 },
      { model: "m-fast", temperature: 0 },
    ]);
  });

  it("a call asking for a tier gets that tier's model unless its role or op is named; without the tier configured, the default", async () => {
    const tiers = { fast: { model: "m-flash", temperature: 0.3, tier: "fast" as const } };
    const { model, server } = await setup(
      [
        { role: "planner", op: "plan", output: PLAN },
        { role: "expert", op: "answer", output: { expert_answer: "a", expert_reasoning: "r" } },
        { role: "critic", op: "review_plan", output: PLAN },
      ],
      { tiers, defaultRole: { model: "m-default", temperature: 0, tier: "standard" } },
    );
    const replies = [
      await model.complete(request("t1", { tier: "fast" })),
      await model.complete({
        ...request("t2"),
        role: "expert",
        op: "answer",
        tier: "fast",
        schema: ROLES.expert.answer.response,
      } as StructuredRequest<unknown>),
      await model.complete(request("t3", { role: "critic", op: "review_plan", tier: "strong" })),
    ];
    expect(replies.map((r) => [r.model, r.tier])).toEqual([
      ["m-flash", "fast"],
      ["m-strong", "strong"],
      ["m-default", "standard"],
    ]);
    expect(server.calls.map((c) => (c.body as { model: string }).model)).toEqual(["m-flash", "m-strong", "m-default"]);
  });

  it("sends the request's temperature instead of the configured one (0 included)", async () => {
    const { model, server } = await setup([
      { role: "expert", op: "answer", output: { expert_answer: "a", expert_reasoning: "r" } },
      { role: "expert", op: "answer", output: { expert_answer: "b", expert_reasoning: "r" } },
    ]);
    const expert = (taskId: string, temperature?: number) =>
      ({
        ...request(taskId),
        role: "expert",
        op: "answer",
        schema: ROLES.expert.answer.response,
        mode: "json_object",
        ...(temperature === undefined ? {} : { temperature }),
      }) as JsonObjectRequest<unknown>;
    await model.complete(expert("t1", 0));
    await model.complete(expert("t2"));
    expect(server.calls.map((c) => (c.body as { temperature: number }).temperature)).toEqual([0, 0.2]);
  });

  it("falls back to json_object when json_schema is rejected, and remembers it", async () => {
    const { model, server } = await setup(
      [
        { role: "planner", op: "plan", output: PLAN },
        { role: "planner", op: "plan", output: PLAN },
      ],
      {},
      true,
    );
    expect((await model.complete(request("t1"))).output).toEqual(PLAN);
    expect((await model.complete(request("t2"))).output).toEqual(PLAN);
    expect(server.calls.map((c) => [c.taskId, c.responseFormat, c.status])).toEqual([
      ["t1", "json_schema", 400],
      ["t1", "json_object", 200],
      ["t2", "json_object", 200],
    ]);
    // Without schema support the schema travels in the prompt.
    const system = (server.calls[1]!.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    expect(system).toMatch(/^You plan\.\n\nReply with one JSON object[\s\S]*"research_steps"/);
    server.assertConsumed();
  });

  it("falls back to prompt + validation when json_object is rejected too", async () => {
    const { model, server } = await setup(
      [
        {
          role: "planner",
          op: "plan",
          status: 400,
          body: { error: { message: "response_format json_object is not supported", type: "invalid_request_error" } },
        },
        { role: "planner", op: "plan", content: `Sure! ${JSON.stringify(PLAN)}` },
      ],
      {},
      true,
    );
    expect((await model.complete(request("t1"))).output).toEqual(PLAN);
    expect(server.calls.map((c) => c.responseFormat)).toEqual(["json_schema", "json_object", null]);
  });

  it("does not fall back when a mode is configured explicitly", async () => {
    const { model, server } = await setup([], { structuredMode: "json_schema" }, true);
    await expect(model.complete(request("t1"))).rejects.toMatchObject({ code: "model_refused", retryable: false });
    expect(server.calls).toHaveLength(1);
  });

  it("retries invalid output once with the validation error, then succeeds", async () => {
    const { model, server } = await setup([
      { role: "planner", op: "plan", content: "this is not json" },
      { role: "planner", op: "plan", output: PLAN },
    ]);
    const reply = await model.complete(request("t1"));
    expect(reply.output).toEqual(PLAN);
    expect(reply.usage.model_calls).toBe(2);
    expect(server.calls.map((c) => c.turn)).toEqual([0, 1]);
    const messages = (server.calls[1]!.body as { messages: Array<{ role: string; content: string }> }).messages;
    expect(messages.slice(2)).toEqual([
      { role: "assistant", content: "this is not json" },
      { role: "user", content: expect.stringMatching(/not valid JSON[\s\S]*Reply again/) },
    ]);
  });

  it("fails model_invalid_output (retryable) when the output is invalid twice", async () => {
    const { model, server } = await setup([
      { role: "planner", op: "plan", content: "nope" },
      { role: "planner", op: "plan", output: { research_steps: [], expert_steps: [] } },
    ]);
    await expect(model.complete(request("t1"))).rejects.toMatchObject({
      name: "AgentmeshError",
      code: "model_invalid_output",
      retryable: true,
    });
    expect(server.calls).toHaveLength(2);
  });

  it("costs at most maxModelRequestsPerCall(maxHttpAttempts) requests", async () => {
    const fail: HttpScriptEntry = { role: "planner", op: "plan", status: 500 };
    const { model, server } = await setup(
      [
        fail,
        fail,
        { role: "planner", op: "plan", content: "bad" },
        fail,
        fail,
        { role: "planner", op: "plan", content: "bad again" },
      ],
      {
        maxHttpAttempts: 3,
      },
    );
    await expect(model.complete(request("t1"))).rejects.toMatchObject({ code: "model_invalid_output" });
    expect(maxModelRequestsPerCall(3)).toBe(6);
    expect(server.calls).toHaveLength(maxModelRequestsPerCall(3));
    server.assertConsumed();
  });

  it("streams content deltas to onToken and reports usage from the final chunk", async () => {
    const { model, server } = await setup([
      { role: "planner", op: "plan", output: PLAN, usage: { prompt_tokens: 120, completion_tokens: 30 } },
    ]);
    const deltas: string[] = [];
    const reply = await model.complete(request("t1", { onToken: (d) => deltas.push(d) }));
    expect(reply.output).toEqual(PLAN);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(JSON.stringify(PLAN));
    expect(reply.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 30, model_calls: 1 });
    expect(server.calls[0]).toMatchObject({
      stream: true,
      body: { stream: true, stream_options: { include_usage: true } },
    });
  });

  it("prices usage from the price table, and 0 for unknown models", async () => {
    const prices = { "m-fast": { input_per_mtok: 2, output_per_mtok: 10 } };
    const usage = { prompt_tokens: 1000, completion_tokens: 500 };
    const { model } = await setup(
      [
        { role: "planner", op: "plan", output: PLAN, usage },
        { role: "expert", op: "answer", output: { expert_answer: "a", expert_reasoning: "r" }, usage },
      ],
      { prices },
    );
    expect((await model.complete(request("t1"))).usage.cost_usd).toBeCloseTo(0.007, 12);
    const expert = await model.complete({
      ...request("t2"),
      role: "expert",
      op: "answer",
      schema: ROLES.expert.answer.response,
    } as StructuredRequest<unknown>);
    expect(expert.usage.cost_usd).toBe(0);
  });

  it("rejects invalid options at creation, listing the problems", () => {
    const create = () =>
      createOpenAIModel({
        baseURL: "not a url",
        roles: {},
        defaultRole: { model: "", temperature: 0, tier: "fast" },
        timeoutMs: 0,
      });
    for (const field of [/at baseURL/, /at defaultRole\.model/, /at timeoutMs/]) expect(create).toThrow(field);
  });
});

describe("OpenAI-compatible adapter: json_object and text modes", () => {
  const jsonObject = (taskId: string): JsonObjectRequest<Plan> => ({ ...request(taskId), mode: "json_object" });
  const systemOf = (body: unknown) => (body as { messages: Array<{ content: string }> }).messages[0]!.content;
  const text = (taskId: string, onToken?: (d: string) => void) =>
    ({
      mode: "text",
      role: "writer",
      op: "draft",
      taskId,
      system: "You write.",
      prompt: "Write.",
      input: {},
      ...(onToken ? { onToken } : {}),
    }) as const;

  it("json_object: sends response_format json_object with the schema in the prompt, and validates once", async () => {
    const { model, server } = await setup([{ role: "planner", op: "plan", output: PLAN }]);
    const reply = await model.complete(jsonObject("t1"));
    expect(reply.output).toEqual(PLAN);
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]).toMatchObject({
      responseFormat: "json_object",
      stream: false,
      body: { response_format: { type: "json_object" } },
    });
    expect(systemOf(server.calls[0]!.body)).toMatch(/^You plan\.\n\nReply with one JSON object[\s\S]*"research_steps"/);
  });

  it("json_object: invalid output is not retried — one request, model_invalid_output not retryable", async () => {
    const { model, server } = await setup([
      { role: "planner", op: "plan", content: "this is not json" },
      { role: "planner", op: "plan", output: PLAN },
    ]);
    await expect(model.complete(jsonObject("t1"))).rejects.toMatchObject({
      code: "model_invalid_output",
      retryable: false,
      message: expect.stringMatching(/not valid JSON/),
    });
    expect(server.calls.map((c) => c.turn)).toEqual([0]);
    expect(maxModelRequestsPerCall(3, "json_object")).toBe(3);
  });

  it("json_object: 5xx is still retried at the HTTP level", async () => {
    const { model, server } = await setup([
      { role: "planner", op: "plan", status: 503 },
      { role: "planner", op: "plan", output: PLAN },
    ]);
    expect((await model.complete(jsonObject("t1"))).output).toEqual(PLAN);
    expect(server.calls.map((c) => c.status)).toEqual([503, 200]);
  });

  it("json_object: a server that rejects json_object fails the call (not retryable) and later calls send prompt-only", async () => {
    const rejected: HttpScriptEntry = {
      role: "planner",
      op: "plan",
      status: 400,
      body: { error: { message: "response_format json_object is not supported", type: "invalid_request_error" } },
    };
    const { model, server } = await setup([rejected, { role: "planner", op: "plan", output: PLAN }]);
    await expect(model.complete(jsonObject("t1"))).rejects.toMatchObject({ code: "model_refused", retryable: false });
    expect(server.calls).toHaveLength(1);
    expect((await model.complete(jsonObject("t2"))).output).toEqual(PLAN);
    expect(server.calls.map((c) => c.responseFormat)).toEqual(["json_object", null]);
  });

  it("text: streams with include_usage, no response_format and no schema, and returns the text with its usage", async () => {
    const { model, server } = await setup([
      {
        role: "writer",
        op: "draft",
        content: "Hello there, this is a streamed draft.",
        usage: { prompt_tokens: 9, completion_tokens: 8 },
      },
    ]);
    const deltas: string[] = [];
    const reply = await model.complete(text("t1", (d) => deltas.push(d)));
    const output: string = reply.output;
    expect(output).toBe("Hello there, this is a streamed draft.");
    expect(deltas).toEqual(["Hello there, thi", "s is a streamed ", "draft."]);
    expect(reply.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 8, model_calls: 1 });
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]).toMatchObject({
      stream: true,
      responseFormat: null,
      body: { stream: true, stream_options: { include_usage: true } },
    });
    expect(systemOf(server.calls[0]!.body)).toBe("You write.");
  });

  it("text: streams even without onToken, and tolerates a server that sends no usage", async () => {
    const { model, server } = await setup([{ role: "writer", op: "draft", content: "plain", omitUsage: true }]);
    const reply = await model.complete(text("t1"));
    expect(reply).toMatchObject({ output: "plain", usage: { prompt_tokens: 0, completion_tokens: 0, model_calls: 1 } });
    expect(server.calls[0]).toMatchObject({ stream: true });
  });

  it("text: a 429 before the stream starts is retried; a stream that breaks after deltas is not", async () => {
    const { model, server } = await setup(
      [
        { role: "writer", op: "draft", status: 429 },
        { role: "writer", op: "draft", content: "retried fine" },
        { role: "writer", op: "draft", content: "x".repeat(64), chunkDelayMs: 2_000 },
        { role: "writer", op: "draft", content: "never sent" },
      ],
      { timeoutMs: 300 },
    );
    const first: string[] = [];
    expect((await model.complete(text("t1", (d) => first.push(d)))).output).toBe("retried fine");
    expect(first).toEqual(["retried fine"]);
    const second: string[] = [];
    await expect(model.complete(text("t2", (d) => second.push(d)))).rejects.toMatchObject({
      code: "timeout",
      retryable: true,
    });
    expect(second).toEqual(["x".repeat(16)]);
    expect(server.calls.map((c) => [c.taskId, c.status])).toEqual([
      ["t1", 429],
      ["t1", 200],
      ["t2", 200],
    ]);
    expect(maxModelRequestsPerCall(3, "text")).toBe(3);
  });
});
