import { ChatOpenAI } from "@langchain/openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { conversationTurn } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import type { Cluster, Proc } from "./harness.js";
import { startCriticChainGateways, type CriticChainGateways } from "./gateway-kit.js";

// The OpenAI-compatible endpoint as LangChain's ChatOpenAI meets it, configured the way its docs
// tell a user to point it at another server (a base URL and a key, every other option left at its
// default): two gateway replicas, one coordinator, the critic-chain agents on the scripted model
// (slow on purpose, so a stream can be left mid-answer) and its critic on the offline engine.

const ALICE = generateApiKey();
const QUESTION = "What is CRISPR and who invented it?";
const MODEL = "agentmesh/critic-chain";

let setup: CriticChainGateways;
let cluster: Cluster;
let a1: string, a2: string;
let a2proc: Proc;

beforeAll(async () => {
  setup = await startCriticChainGateways({
    prefix: "gwl",
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
  a2proc = setup.second;
}, 180_000);

afterAll(async () => {
  await setup?.close();
});

/** ChatOpenAI as a user points it at agentmesh; a thread id (header) lets the test find the session. */
const chat = (base: string, thread: string, extra: Partial<ConstructorParameters<typeof ChatOpenAI>[0]> = {}) =>
  new ChatOpenAI({
    model: MODEL,
    apiKey: ALICE,
    configuration: { baseURL: `${base}/v1`, defaultHeaders: { "X-Agentmesh-Thread": thread } },
    ...extra,
  });

const newThread = (name: string) => `${name}-${Date.now().toString(36)}`;

/** The sessions a thread holds, in order. */
const sessionsOf = async (thread: string) => (await cluster.store.loadThread(thread))?.sessions ?? [];

/** The session's final answer as the store holds it. */
async function finalAnswer(sid: string): Promise<string> {
  const loaded = await cluster.store.load(sid);
  const answer = loaded ? conversationTurn(loaded.state).answer : null;
  if (answer === null) throw new Error(`session ${sid} has no final answer`);
  return answer;
}

describe("ChatOpenAI with its defaults", () => {
  test("invoke and stream each carry exactly the session's final answer", async () => {
    const [plain, streamed] = [newThread("lc-plain"), newThread("lc-stream")];
    const reply = await chat(a1, plain).invoke(QUESTION);
    const [sid] = await sessionsOf(plain);
    expect(reply.content).toBe(await finalAnswer(sid!));
    expect(reply.response_metadata).toMatchObject({ finish_reason: "stop", model_name: MODEL });

    let text = "";
    let usage: unknown;
    for await (const chunk of await chat(a2, streamed).stream(QUESTION)) {
      expect(typeof chunk.content).toBe("string");
      text += String(chunk.content);
      usage = chunk.usage_metadata ?? usage;
    }
    const [ssid] = await sessionsOf(streamed);
    expect(text).toBe(await finalAnswer(ssid!));
    // ChatOpenAI asks for the usage chunk by default (stream_options.include_usage)
    expect(usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
  });

  test("its own retries after timeouts, with one Idempotency-Key: one session, its whole answer", async () => {
    const thread = newThread("lc-retry");
    // ChatOpenAI's per-call `options.headers` reach only its non-streamed calls; a key that holds
    // for both goes in the headers of a model made for the request (docs/gateway.md, "Idempotency")
    const headers = { "X-Agentmesh-Thread": thread, "Idempotency-Key": `lc-${thread}` };
    // a session takes longer than 400 ms: ChatOpenAI leaves its first tries and retries (with the
    // same key) until one finds the session finished
    let tries = 0;
    const hasty = chat(a1, thread, {
      timeout: 400,
      maxRetries: 6,
      configuration: {
        baseURL: `${a1}/v1`,
        defaultHeaders: headers,
        fetch: (input: string | URL | Request, init?: RequestInit) => ((tries += 1), fetch(input, init)),
      },
    });
    const reply = await hasty.invoke(QUESTION);
    expect(tries).toBeGreaterThan(1);
    const sessions = await sessionsOf(thread);
    expect(sessions).toHaveLength(1);
    expect(reply.content).toBe(await finalAnswer(sessions[0]!));

    // streamed from the other replica with the same key: the same session's answer, no second one
    const again = chat(a2, thread, { configuration: { baseURL: `${a2}/v1`, defaultHeaders: headers } });
    let text = "";
    for await (const chunk of await again.stream(QUESTION)) text += String(chunk.content);
    expect(text).toBe(reply.content);
    expect(await sessionsOf(thread)).toEqual(sessions);
  });

  test("an abort mid-stream cancels the session", async () => {
    const thread = newThread("lc-abort");
    const stop = new AbortController();
    const stream = await chat(a1, thread).stream(QUESTION, { signal: stop.signal });
    const it = stream[Symbol.asyncIterator]();
    await it.next(); // the answer has begun: the session runs
    stop.abort();
    await expect(it.next()).rejects.toThrow(/abort/i);
    const [sid] = await sessionsOf(thread);
    expect((await cluster.waitDone(sid!)).state.meta.status).toBe("cancelled");
  });

  test("each refused parameter, as ChatOpenAI sends it, is a 400 naming it; no session starts", async () => {
    // the tool as OpenAI's function format (what bindTools turns a LangChain tool into)
    const lookup = {
      type: "function" as const,
      function: {
        name: "lookup",
        description: "Looks a term up",
        parameters: { type: "object", properties: { term: { type: "string" } }, required: ["term"] },
      },
    };
    const thread = newThread("lc-refused");
    const refused: Array<[string, () => Promise<unknown>]> = [
      ["n", () => chat(a1, thread, { n: 2 }).invoke(QUESTION)],
      ["logprobs", () => chat(a1, thread, { logprobs: true }).invoke(QUESTION)],
      ["tool_choice", () => chat(a1, thread).invoke(QUESTION, { tools: [lookup], tool_choice: "required" })],
      [
        "response_format",
        () =>
          chat(a1, thread).invoke(QUESTION, {
            response_format: {
              type: "json_schema",
              json_schema: { name: "answer", schema: { type: "object", properties: { answer: { type: "string" } } } },
            },
          }),
      ],
    ];
    for (const [param, send] of refused) {
      const err = await send().catch((e: unknown) => e);
      expect(err, param).toMatchObject({ status: 400, code: "unsupported_parameter", param });
      expect(String(err), param).toContain(param);
    }
    expect(await sessionsOf(thread)).toEqual([]);
  });
});

// Last: it stops a replica.
describe("a drain mid-stream", () => {
  test("SIGTERM on the replica streaming the answer: ChatOpenAI gets the whole answer or an error naming the shutdown, and the session runs on", async () => {
    const thread = newThread("lc-drain");
    const stream = await chat(a2, thread, { maxRetries: 0 }).stream(QUESTION);
    const it = stream[Symbol.asyncIterator]();
    let text = "";
    const first = await it.next();
    text += String(first.value?.content ?? "");
    a2proc.child.kill("SIGTERM");
    const ended = await (async () => {
      for (let c = await it.next(); !c.done; c = await it.next()) text += String(c.value.content);
      return null;
    })().catch((e: unknown) => e);
    const [sid] = await sessionsOf(thread);
    expect((await cluster.waitDone(sid!)).state.meta.status).toBe("completed");
    if (ended === null) expect(text).toBe(await finalAnswer(sid!));
    else expect(String(ended)).toMatch(/shutting down/);
    expect(await a2proc.exited).toEqual({ code: 0, signal: null });
  });
});
