import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { conversationTurn } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import type { Cluster } from "./harness.js";
import { call, startCriticChainGateways, type CriticChainGateways } from "./gateway-kit.js";

// The OpenAI-compatible endpoint as OpenAI's own client meets it, row by row of the compatibility
// table (docs/gateway.md, "Compatibility"): two gateway replicas on loopback under NATS access
// control, one coordinator, the critic-chain agents on the scripted model (slow on purpose, so a
// stream can be left or cancelled mid-answer) and its critic on the offline engine.

const ALICE = generateApiKey();
const QUESTION = "What is CRISPR and who invented it?";

let setup: CriticChainGateways;
let cluster: Cluster;
let a1: string, a2: string;

beforeAll(async () => {
  setup = await startCriticChainGateways({
    prefix: "gwo",
    sessions: 30,
    delayMs: 120,
    gatewayEnv: {
      AGENTMESH_API_KEYS: apiKeyEntry("alice", ALICE),
      AGENTMESH_RATE_LIMIT: "10000",
      AGENTMESH_MAX_CONCURRENT_SESSIONS: "100",
    },
  });
  cluster = setup.cluster;
  [a1, a2] = setup.urls;
}, 180_000);

afterAll(async () => {
  await setup?.close();
});

/** The session's final answer as the store holds it. */
async function finalAnswer(sid: string): Promise<string> {
  const loaded = await cluster.store.load(sid);
  const answer = loaded ? conversationTurn(loaded.state).answer : null;
  if (answer === null) throw new Error(`session ${sid} has no final answer`);
  return answer;
}

const openai = (base: string, key: string) =>
  new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });

describe("the official openai client against /v1", () => {
  test("completions, plain and streamed, carry exactly the session's final answer; the usage chunk only when asked for", async () => {
    const client = openai(a1, ALICE);
    const ask = { model: "agentmesh/critic-chain", messages: [{ role: "user" as const, content: QUESTION }] };
    const [plain, streamed, withUsage] = await Promise.all([
      client.chat.completions.create(ask).withResponse(),
      client.chat.completions.create({ ...ask, stream: true }).withResponse(),
      openai(a2, ALICE)
        .chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } })
        .withResponse(),
    ]);
    const sid = (r: { response: Response }) => r.response.headers.get("x-agentmesh-session") ?? "";
    expect(plain.data.object).toBe("chat.completion");
    expect(plain.data.choices[0]?.message.content).toBe(await finalAnswer(sid(plain)));
    expect(plain.data.choices[0]?.finish_reason).toBe("stop");

    for (const [r, usageWanted] of [
      [streamed, false],
      [withUsage, true],
    ] as const) {
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      for await (const chunk of r.data) chunks.push(chunk);
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
      const answer = await finalAnswer(sid(r));
      expect(text).toBe(answer);
      expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? "") !== "").length).toBeGreaterThan(1); // really streamed in pieces
      expect(chunks.filter((c) => c.choices[0]?.finish_reason === "stop")).toHaveLength(1);
      const usage = chunks.filter((c) => c.usage);
      if (!usageWanted) expect(usage).toEqual([]);
      else {
        const u = (await cluster.store.load(sid(r)))?.state.meta.usage;
        expect(usage).toHaveLength(1);
        expect(usage[0]?.choices).toEqual([]);
        expect(usage[0]?.usage).toEqual({
          prompt_tokens: u?.prompt_tokens,
          completion_tokens: u?.completion_tokens,
          total_tokens: (u?.prompt_tokens ?? 0) + (u?.completion_tokens ?? 0),
        });
        expect(usage[0]?.usage?.completion_tokens).toBeGreaterThan(0);
        expect(chunks.at(-1)).toBe(usage[0]);
      }
    }
  });

  test("/v1/models lists the workflows; an unknown model is 404 and a bad key 401, as OpenAI's typed errors", async () => {
    const models = await openai(a2, ALICE).models.list();
    expect(models.data.map((m) => m.id)).toEqual(
      expect.arrayContaining(["agentmesh/critic-chain", "agentmesh/blackboard"]),
    );

    const unknown = await openai(a1, ALICE)
      .chat.completions.create({ model: "agentmesh/nope", messages: [{ role: "user", content: QUESTION }] })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ status: 404, code: "model_not_found", type: "invalid_request_error", param: null });
    expect((unknown as Error).message).toContain("agentmesh/critic-chain");
    const one = await openai(a1, ALICE).models.retrieve("agentmesh/halo");
    expect(one).toMatchObject({ id: "agentmesh/halo", object: "model", owned_by: "agentmesh" });
    const missing = await openai(a1, ALICE)
      .models.retrieve("agentmesh/nope")
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: "model_not_found", type: "invalid_request_error" });

    const badKey = await openai(a1, "am_not-a-key")
      .chat.completions.create({ model: "agentmesh/critic-chain", messages: [{ role: "user", content: QUESTION }] })
      .catch((e: unknown) => e);
    expect(badKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(badKey).toMatchObject({ status: 401, code: "invalid_api_key", type: "authentication_error" });
    const badJson = await call(a1, "/v1/chat/completions", { key: ALICE, json: "{not json" });
    expect(badJson.status).toBe(400);
    expect(badJson.body).toEqual({
      error: {
        message: expect.stringMatching(/not valid JSON/),
        type: "invalid_request_error",
        param: null,
        code: "bad_request",
      },
    });
  });
});

describe("the compatibility table, through the official openai client", () => {
  test("every accepted-and-ignored field at once, and a two-character question: answered as usual", async () => {
    const client = openai(a2, ALICE);
    const r = await client.chat.completions
      .create({
        model: "agentmesh/critic-chain",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "hi" },
        ],
        temperature: 0.2,
        top_p: 0.9,
        seed: 7, // the sampler's random seed (ignored)
        presence_penalty: 0.1,
        frequency_penalty: 0.1,
        logit_bias: { "50256": -100 },
        stop: ["\n\n"],
        max_tokens: 16,
        max_completion_tokens: 16,
        user: "user-1",
        store: false,
        parallel_tool_calls: false,
        n: 1,
        tool_choice: "auto",
        tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
        response_format: { type: "text" },
        logprobs: false,
        modalities: ["text"],
      })
      .withResponse();
    const sid = r.response.headers.get("x-agentmesh-session") ?? "";
    expect(r.data.choices[0]?.message.content).toBe(await finalAnswer(sid));
    expect(r.data.choices[0]?.finish_reason).toBe("stop");
    const loaded = await cluster.store.load(sid);
    expect(loaded && conversationTurn(loaded.state).question).toBe("hi");
  });

  test("each refused field is OpenAI's BadRequestError naming it; no session starts", async () => {
    const client = openai(a1, ALICE);
    const ask = { model: "agentmesh/critic-chain", messages: [{ role: "user" as const, content: QUESTION }] };
    const refused: Array<[string, Record<string, unknown>]> = [
      ["n", { n: 2 }],
      ["tool_choice", { tool_choice: "required", tools: [{ type: "function", function: { name: "f" } }] }],
      ["response_format", { response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } } }],
      ["logprobs", { logprobs: true }],
      ["modalities", { modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }],
    ];
    for (const [param, fields] of refused) {
      const err = await client.chat.completions.create({ ...ask, ...fields }).catch((e: unknown) => e);
      expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err, param).toMatchObject({
        status: 400,
        param,
        code: "unsupported_parameter",
        type: "invalid_request_error",
      });
    }
  });

  test("a client that stops reading (abort) cancels its session; with X-Agentmesh-Cancel-On-Disconnect: false it runs on", async () => {
    const ask = {
      model: "agentmesh/critic-chain",
      messages: [{ role: "user" as const, content: QUESTION }],
      stream: true as const,
    };
    const leave = async (headers: Record<string, string>) => {
      const stop = new AbortController();
      const r = await openai(a1, ALICE).chat.completions.create(ask, { signal: stop.signal, headers }).withResponse();
      const sid = r.response.headers.get("x-agentmesh-session") ?? "";
      for await (const _chunk of r.data) break; // the first chunk, then Stop
      stop.abort();
      return sid;
    };
    const stopped = await leave({});
    const kept = await leave({ "x-agentmesh-cancel-on-disconnect": "false" });
    expect((await cluster.waitDone(stopped)).state.meta.status).toBe("cancelled");
    expect((await cluster.waitDone(kept)).state.meta.status).toBe("completed");
  });

  test("a session cancelled while its answer streams ends with finish_reason cancelled", async () => {
    const r = await openai(a1, ALICE)
      .chat.completions.create({
        model: "agentmesh/critic-chain",
        messages: [{ role: "user", content: QUESTION }],
        stream: true,
      })
      .withResponse();
    const sid = r.response.headers.get("x-agentmesh-session") ?? "";
    const cancel = await call(a2, `/api/v1/sessions/${sid}/cancel`, { key: ALICE, json: { reason: "test" } });
    expect(cancel.status).toBe(202);
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of r.data) chunks.push(chunk);
    expect(chunks.flatMap((c) => c.choices.map((x) => x.finish_reason)).filter((f) => f !== null)).toEqual([
      "cancelled",
    ]);
    expect((await cluster.store.load(sid))?.state.meta.status).toBe("cancelled");
  });
});

describe("Idempotency-Key, through the official openai client", () => {
  const ask = (content: string, threadId: string) => ({
    model: "agentmesh/critic-chain",
    messages: [{ role: "user" as const, content }],
    metadata: { thread_id: threadId },
  });

  test("the SDK's own retries after timeouts, then a streamed retry on the other replica: one session, its whole answer", async () => {
    const thread = `idem-${Date.now().toString(36)}`;
    const headers = { "Idempotency-Key": `retry-${thread}` };
    // a session takes longer than 400 ms (five model calls in a row, 120 ms each): the SDK leaves its
    // first tries and retries with the same key until one finds the session finished
    let tries = 0;
    const hasty = new OpenAI({
      baseURL: `${a1}/v1`,
      apiKey: ALICE,
      maxRetries: 6,
      timeout: 400,
      fetch: (input, init) => ((tries += 1), fetch(input, init)),
    });
    const first = await hasty.chat.completions.create(ask(QUESTION, thread), { headers }).withResponse();
    expect(tries).toBeGreaterThan(1);
    const sid0 = first.response.headers.get("x-agentmesh-session") ?? "";
    expect(first.data.choices[0]?.message.content).toBe(await finalAnswer(sid0));

    // streamed this time, from the other replica: the answer from its start, not a second session
    const r = await openai(a2, ALICE)
      .chat.completions.create({ ...ask(QUESTION, thread), stream: true }, { headers })
      .withResponse();
    const sid = r.response.headers.get("x-agentmesh-session") ?? "";
    expect(sid).toBe(sid0);
    let text = "";
    for await (const chunk of r.data) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe(await finalAnswer(sid));
    expect((await cluster.store.loadThread(thread))?.sessions).toEqual([sid]);
    expect((await cluster.store.load(sid))?.state.meta.status).toBe("completed");

    // once more after the end, not streamed: the same session's answer again
    const again = await openai(a1, ALICE).chat.completions.create(ask(QUESTION, thread), { headers }).withResponse();
    expect(again.response.headers.get("x-agentmesh-session")).toBe(sid);
    expect(again.data.choices[0]?.message.content).toBe(text);
    expect((await cluster.store.loadThread(thread))?.sessions).toEqual([sid]);
  });

  test("the same key with another body is a 422 naming the header; a client that leaves with a key does not cancel", async () => {
    const thread = `idem2-${Date.now().toString(36)}`;
    const headers = { "Idempotency-Key": `reuse-${thread}` };
    const stop = new AbortController();
    const first = await openai(a1, ALICE).chat.completions.create(
      { ...ask(QUESTION, thread), stream: true },
      { headers, signal: stop.signal },
    );
    for await (const _chunk of first) break; // the session runs: leave
    stop.abort();
    const other = await openai(a2, ALICE)
      .chat.completions.create(ask("Who discovered penicillin?", thread), { headers })
      .catch((e: unknown) => e);
    expect(other).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(other).toMatchObject({
      status: 422,
      code: "idempotency_key_reused",
      param: "Idempotency-Key",
      type: "invalid_request_error",
    });
    const bad = await openai(a2, ALICE)
      .chat.completions.create(ask(QUESTION, thread), { headers: { "Idempotency-Key": "has space" } })
      .catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 400, param: "Idempotency-Key" });
    // the left request was not cancelled (it had a key), and finishes
    const sessions = (await cluster.store.loadThread(thread))?.sessions ?? [];
    expect(sessions).toHaveLength(1);
    expect((await cluster.waitDone(sessions[0] ?? "")).state.meta.status).toBe("completed");
  });
});
