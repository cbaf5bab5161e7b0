import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createScriptedModel, type ScriptEntry } from "./scripted.js";
import type { StructuredRequest } from "./types.js";

const schema = z.object({ n: z.number() });
const req = (
  role: string,
  op: string,
  taskId: string,
  extra: Partial<StructuredRequest<{ n: number }>> = {},
): StructuredRequest<{ n: number }> => ({
  role,
  op,
  taskId,
  system: "",
  prompt: "",
  input: {},
  schema,
  schemaName: "n",
  ...extra,
});

describe("createScriptedModel", () => {
  it("hands out entries in order per role+op, independently of other pairs", async () => {
    const model = createScriptedModel([
      { role: "planner", op: "plan", output: { n: 1 } },
      { role: "critic", op: "review_plan", output: { n: 10 } },
      { role: "planner", op: "plan", output: { n: 2 } },
    ]);
    expect((await model.complete(req("planner", "plan", "a"))).output).toEqual({ n: 1 });
    expect((await model.complete(req("planner", "plan", "b"))).output).toEqual({ n: 2 });
    expect((await model.complete(req("critic", "review_plan", "c"))).output).toEqual({ n: 10 });
    model.assertConsumed();
    expect(model.calls).toEqual([
      { role: "planner", op: "plan", taskId: "a", mode: "structured", temperature: null, tier: null, entry: 0 },
      { role: "planner", op: "plan", taskId: "b", mode: "structured", temperature: null, tier: null, entry: 2 },
      { role: "critic", op: "review_plan", taskId: "c", mode: "structured", temperature: null, tier: null, entry: 1 },
    ]);
  });

  it("replays the same entry for a repeated task id (a redelivered task)", async () => {
    const model = createScriptedModel([
      { role: "expert", op: "answer", output: { n: 1 } },
      { role: "expert", op: "answer", output: { n: 2 } },
    ]);
    const first = await model.complete(req("expert", "answer", "t1"));
    const again = await model.complete(req("expert", "answer", "t1"));
    expect(again).toEqual(first);
    expect((await model.complete(req("expert", "answer", "t2"))).output).toEqual({ n: 2 });
    expect(model.calls.map((c) => c.entry)).toEqual([0, 0, 1]);
  });

  it("replays a scripted error identically too", async () => {
    const model = createScriptedModel([
      { role: "expert", op: "answer", error: { code: "model_rate_limited", message: "slow down" } },
    ]);
    for (let i = 0; i < 2; i++) {
      await expect(model.complete(req("expert", "answer", "t1"))).rejects.toMatchObject({
        name: "AgentmeshError",
        code: "model_rate_limited",
        retryable: true,
        message: "slow down",
      });
    }
  });

  it("honours an explicit retryable flag on an error", async () => {
    const model = createScriptedModel([
      { role: "expert", op: "answer", error: { code: "model_error", message: "down", retryable: false } },
    ]);
    await expect(model.complete(req("expert", "answer", "t"))).rejects.toMatchObject({
      code: "model_error",
      retryable: false,
    });
  });

  it("an unexpected call throws internal and is recorded; assertConsumed reports it", async () => {
    const model = createScriptedModel([{ role: "planner", op: "plan", output: { n: 1 } }]);
    await model.complete(req("planner", "plan", "a"));
    await expect(model.complete(req("planner", "plan", "b"))).rejects.toMatchObject({
      code: "internal",
      message: expect.stringContaining("unexpected call planner.plan"),
    });
    await expect(model.complete(req("router", "route", "c"))).rejects.toMatchObject({ code: "internal" });
    expect(model.calls.filter((c) => c.entry === null).map((c) => c.taskId)).toEqual(["b", "c"]);
    expect(() => model.assertConsumed()).toThrow(
      /unexpected calls:\n {2}planner\.plan task b\n {2}router\.route task c/,
    );
  });

  it("assertConsumed lists unconsumed entries", async () => {
    const model = createScriptedModel([
      { role: "planner", op: "plan", output: { n: 1 } },
      { role: "critic", op: "review_plan", output: { n: 2 } },
      { role: "critic", op: "review_plan", output: { n: 3 } },
    ]);
    await model.complete(req("critic", "review_plan", "a"));
    expect(() => model.assertConsumed()).toThrow(
      /unconsumed entries:\n {2}#0 planner\.plan\n {2}#2 critic\.review_plan/,
    );
  });

  it("validates output against the request's schema", async () => {
    const model = createScriptedModel([{ role: "planner", op: "plan", output: { n: "not a number" } }]);
    await expect(model.complete(req("planner", "plan", "a"))).rejects.toMatchObject({ code: "model_invalid_output" });
  });

  it("returns a copy, so mutating an output cannot change a replay", async () => {
    const model = createScriptedModel([{ role: "planner", op: "plan", output: { n: 1 } }]);
    const first = await model.complete(req("planner", "plan", "a"));
    (first.output as { n: number }).n = 99;
    expect((await model.complete(req("planner", "plan", "a"))).output).toEqual({ n: 1 });
  });

  it("reports scripted usage with model_calls 1 by default", async () => {
    const model = createScriptedModel(
      [{ role: "planner", op: "plan", output: { n: 1 }, usage: { prompt_tokens: 7, cost_usd: 0.5 } }],
      { model: "gpt-x", tier: "strong" },
    );
    const reply = await model.complete(req("planner", "plan", "a"));
    expect(reply).toMatchObject({
      usage: { prompt_tokens: 7, completion_tokens: 0, cost_usd: 0.5, model_calls: 1 },
      model: "gpt-x",
      tier: "strong",
    });
  });

  it("waits delayMs, and an abort during the wait cancels", async () => {
    const model = createScriptedModel([
      { role: "planner", op: "plan", output: { n: 1 }, delayMs: 30 },
      { role: "planner", op: "plan", output: { n: 2 }, delayMs: 10_000 },
    ]);
    const started = performance.now();
    await model.complete(req("planner", "plan", "a"));
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 20);
    await expect(model.complete(req("planner", "plan", "b", { signal: ctrl.signal }))).rejects.toMatchObject({
      code: "cancelled",
    });
  });

  it("json_object: a reply that is not JSON or fails the schema is model_invalid_output, not retryable (structured: retryable)", async () => {
    const model = createScriptedModel([
      { role: "planner", op: "plan", content: "{ nope" },
      { role: "planner", op: "plan", output: { n: "x" } },
      { role: "planner", op: "plan", content: "{ nope" },
      { role: "planner", op: "plan", content: '{"n": 3}' },
    ]);
    await expect(
      model.complete({ ...req("planner", "plan", "a"), mode: "json_object" as const }),
    ).rejects.toMatchObject({
      code: "model_invalid_output",
      retryable: false,
      message: expect.stringMatching(/not valid JSON/),
    });
    await expect(
      model.complete({ ...req("planner", "plan", "b"), mode: "json_object" as const }),
    ).rejects.toMatchObject({ code: "model_invalid_output", retryable: false });
    await expect(model.complete(req("planner", "plan", "c"))).rejects.toMatchObject({
      code: "model_invalid_output",
      retryable: true,
    });
    expect((await model.complete({ ...req("planner", "plan", "d"), mode: "json_object" as const })).output).toEqual({
      n: 3,
    });
    expect(model.calls.map((c) => c.mode)).toEqual(["json_object", "json_object", "structured", "json_object"]);
  });

  it("text: streams the reply in 16-character deltas and returns it whole; an `output` entry is its JSON text", async () => {
    const model = createScriptedModel([
      { role: "writer", op: "draft", content: "a".repeat(20) + "b".repeat(20) },
      { role: "writer", op: "draft", output: { n: 1 } },
    ]);
    const deltas: string[] = [];
    const text = {
      mode: "text",
      role: "writer",
      op: "draft",
      system: "",
      prompt: "",
      input: {},
      onToken: (d: string) => deltas.push(d),
    } as const;
    const reply = await model.complete({ ...text, taskId: "a" });
    expect(reply.output).toBe("a".repeat(20) + "b".repeat(20));
    expect(deltas).toEqual(["a".repeat(16), "aaaabbbbbbbbbbbb", "b".repeat(8)]);
    expect((await model.complete({ ...text, taskId: "b" })).output).toBe('{"n":1}');
  });

  it("rejects an ill-formed script up front", () => {
    expect(() => createScriptedModel([{ role: "planner", op: "plan" } as ScriptEntry])).toThrow(
      /exactly one of `output`, `content` and `error`/,
    );
    expect(() => createScriptedModel([{ role: "planner", op: "plan", output: {}, content: "{}" }])).toThrow(
      /exactly one of/,
    );
    expect(() =>
      createScriptedModel([{ role: "planner", op: "plan", output: {}, error: { code: "timeout", message: "x" } }]),
    ).toThrow(/#0/);
    expect(() =>
      createScriptedModel([{ role: "p", op: "o", error: { code: "nope" as "timeout", message: "x" } }]),
    ).toThrow(/invalid script/);
  });
});
