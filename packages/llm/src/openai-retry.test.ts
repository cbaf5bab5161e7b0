import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createOpenAIModel, type OpenAIModelOptions } from "./openai.js";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "./scripted-server.js";
import type { StructuredRequest } from "./types.js";

const schema = z.object({ answer: z.string() });
const OK: HttpScriptEntry = { role: "expert", op: "answer", output: { answer: "42" } };
const status = (code: number, extra: Partial<HttpScriptEntry> = {}): HttpScriptEntry => ({
  role: "expert",
  op: "answer",
  status: code,
  ...extra,
});

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(script: HttpScriptEntry[], opts: Partial<OpenAIModelOptions> = {}) {
  server = await startScriptedOpenAIServer({ script, host: "127.0.0.1" });
  const sleeps: number[] = [];
  const model = createOpenAIModel({
    baseURL: server.url,
    roles: {},
    defaultRole: { model: "m", temperature: 0, tier: "standard" },
    timeoutMs: 5_000,
    maxHttpAttempts: 3,
    backoff: { random: () => 0.5 },
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    ...opts,
  });
  return { model, sleeps, server };
}

const request = (
  taskId: string,
  extra: Partial<StructuredRequest<{ answer: string }>> = {},
): StructuredRequest<{ answer: string }> => ({
  role: "expert",
  op: "answer",
  taskId,
  system: "s",
  prompt: "p",
  input: {},
  schema,
  schemaName: "answer",
  ...extra,
});

describe("OpenAI-compatible adapter: retries and failures", () => {
  it("429 then 200 succeeds, waiting exactly the Retry-After", async () => {
    const { model, sleeps, server } = await setup([status(429, { retryAfterSec: 2 }), OK]);
    expect((await model.complete(request("t1"))).output).toEqual({ answer: "42" });
    expect(sleeps).toEqual([2000]);
    expect(server.calls.map((c) => c.status)).toEqual([429, 200]);
    server.assertConsumed();
  });

  it("backs off exponentially with jitter when there is no Retry-After", async () => {
    const { model, sleeps } = await setup([status(503), status(502), OK]);
    await model.complete(request("t1"));
    // random() = 0.5: half the ceiling plus a quarter of it; ceilings 500 then 1000 ms.
    expect(sleeps).toEqual([375, 750]);
  });

  it("a permanent 500 costs exactly maxHttpAttempts requests, then model_error", async () => {
    const { model, sleeps, server } = await setup([status(500), status(500), status(500), OK]);
    await expect(model.complete(request("t1"))).rejects.toMatchObject({
      name: "AgentmeshError",
      code: "model_error",
      retryable: true,
    });
    expect(server.calls).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    // The answer after the three failures was never reached.
    expect(() => server.assertConsumed()).toThrow(/#3 expert\.answer/);
  });

  it("gives up on a 429 whose Retry-After is too long, as rate-limited and retryable", async () => {
    const { model, sleeps, server } = await setup([status(429, { retryAfterSec: 3600 }), OK]);
    await expect(model.complete(request("t1"))).rejects.toMatchObject({ code: "model_rate_limited", retryable: true });
    expect(server.calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("401 is model_refused after one request", async () => {
    const { model, server } = await setup([
      status(401, { body: { error: { message: "Incorrect API key", type: "invalid_request_error" } } }),
      OK,
    ]);
    await expect(model.complete(request("t1"))).rejects.toMatchObject({
      code: "model_refused",
      retryable: false,
      message: expect.stringContaining("Incorrect API key"),
    });
    expect(server.calls).toHaveLength(1);
  });

  it("404 (unknown model) and a 400 not about the response format are model_refused", async () => {
    const { model, server } = await setup([
      status(404),
      status(400, { body: { error: { message: "temperature out of range" } } }),
    ]);
    await expect(model.complete(request("t1"))).rejects.toMatchObject({ code: "model_refused" });
    await expect(model.complete(request("t2"))).rejects.toMatchObject({ code: "model_refused" });
    expect(server.calls).toHaveLength(2);
  });

  it("a reply slower than timeoutMs is a retryable timeout, after maxHttpAttempts tries", async () => {
    const { model, server } = await setup([{ ...OK, delayMs: 5_000 }], { timeoutMs: 150, maxHttpAttempts: 2 });
    const started = performance.now();
    await expect(model.complete(request("t1"))).rejects.toMatchObject({ code: "timeout", retryable: true });
    expect(performance.now() - started).toBeLessThan(3_000);
    // The same entry answered both tries: a retry is the same turn of the same task.
    expect(server.calls.map((c) => c.entry)).toEqual([0, 0]);
  });

  it("a stalled stream times out too", async () => {
    const { model } = await setup([{ ...OK, delayMs: 5_000 }], { timeoutMs: 150, maxHttpAttempts: 1 });
    await expect(model.complete(request("t1", { onToken: () => undefined }))).rejects.toMatchObject({
      code: "timeout",
    });
  });

  it("an abort during the request is cancelled, with no retry", async () => {
    const { model, server } = await setup([{ ...OK, delayMs: 5_000 }]);
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 50);
    await expect(model.complete(request("t1", { signal: ctrl.signal }))).rejects.toMatchObject({
      code: "cancelled",
      retryable: false,
    });
    expect(server.calls).toHaveLength(1);
  });

  it("an abort during the backoff wait is cancelled", async () => {
    const ctrl = new AbortController();
    const { model, server } = await setup([status(500), OK], {
      sleep: () => {
        ctrl.abort();
        return new Promise(() => undefined);
      },
    });
    await expect(model.complete(request("t1", { signal: ctrl.signal }))).rejects.toMatchObject({ code: "cancelled" });
    expect(server.calls).toHaveLength(1);
  });

  it("an already aborted signal sends nothing", async () => {
    const { model, server } = await setup([OK]);
    const ctrl = new AbortController();
    ctrl.abort();
    await expect(model.complete(request("t1", { signal: ctrl.signal }))).rejects.toMatchObject({ code: "cancelled" });
    expect(server.calls).toHaveLength(0);
  });

  it("an unreachable endpoint is a retryable model_error after maxHttpAttempts", async () => {
    const { model, sleeps, server } = await setup([]);
    await server.close();
    await expect(model.complete(request("t1"))).rejects.toMatchObject({ code: "model_error", retryable: true });
    expect(sleeps).toHaveLength(2);
  });
});
