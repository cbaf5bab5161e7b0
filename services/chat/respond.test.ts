import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts, type TokenSink } from "@agentmesh/agent-kit";
import { LIMITS, STREAMING_CONFIG, type ChatRespondRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel, offlineModelOf } from "../../test/setup/model.js";
import { renderRespond } from "./respond.js";
import chat from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const TOOLS = [
  { name: "web_search", description: "Search the web: arguments {query}" },
  { name: "handoff_to_code", description: "Hand the task to the code agent: arguments {task_description, context}" },
];
const request = (task: string, over: Partial<ChatRespondRequest> = {}): ChatRespondRequest => ({
  brief: { query: task, task, handoff_context: null, memory: "" },
  messages: [],
  tools: TOOLS,
  observations: [],
  tool_rounds_left: 5,
  ...over,
});
const task = (input: ChatRespondRequest) => ({
  task_id: "sesschat0002.3.0.0",
  session_id: "sesschat0002",
  role: "chat",
  op: "respond",
  attempt: 0,
  input,
});
const signal = () => new AbortController().signal;

/** Runs chat.respond against a scripted model writing `content`, collecting the token messages it publishes. */
async function respond(content: string, input = request("What is JetStream?")) {
  const sent: Array<Parameters<TokenSink>[0]> = [];
  const model = createScriptedModel([{ role: "chat", op: "respond", content }]);
  const outcome = await createOpRunner(chat, model, { log, prompts, tokens: (t) => void sent.push(t) })(
    task(input),
    signal(),
  );
  return { outcome, sent, calls: model.calls };
}

const ANSWER =
  "JetStream is the persistence layer of NATS: streams keep messages, and consumers read them at their own pace with acknowledgements.";

describe("chat.respond with a model", () => {
  it("streams as the agent node does (STREAMING_CONFIG.agent)", () => {
    expect(chat.ops.respond).toMatchObject({ output: "text", stream: STREAMING_CONFIG.agent, streamOnlyProse: true });
  });

  it("a plain-text reply is the answer, streamed live in order, after one text call", async () => {
    const { outcome, sent, calls } = await respond(ANSWER);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "answer", text: ANSWER },
      provenance: { prompt_version: "chat.respond/v1" },
    });
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.map((t) => t.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.map((t) => t.delta).join("")).toBe(ANSWER);
    expect(calls).toEqual([expect.objectContaining({ mode: "text" })]);
  });

  it("a JSON tool call naming an offered tool is a tool action, and not one token of it is published", async () => {
    const { outcome, sent } = await respond(
      ' {"tool": "handoff_to_code", "arguments": {"task_description": "Write a parser", "context": "CSV input"}}',
    );
    expect(outcome).toMatchObject({
      ok: true,
      output: {
        action: "tool",
        tool: "handoff_to_code",
        arguments: { task_description: "Write a parser", context: "CSV input" },
      },
    });
    expect(sent).toEqual([]);
  });

  it("a handoff tool not offered (outside the matrix, at the cap, or at zero rounds left) goes to the workflow, which answers a refused one as the tool's result", async () => {
    for (const [content, input] of [
      ['{"tool": "handoff_to_chat", "arguments": {"task_description": "Greet them"}}', request("Hello")],
      [
        '{"tool": "handoff_to_writing", "arguments": {"task_description": "Write it up"}}',
        request("Write it up", { tool_rounds_left: 0 }),
      ],
    ] as const) {
      const { outcome, sent } = await respond(content, input);
      expect(outcome, content).toMatchObject({
        ok: true,
        output: { action: "tool", tool: expect.stringMatching(/^handoff_to_/) },
      });
      expect(sent, content).toEqual([]);
    }
  });

  it("a reply that starts with white space is the answer from its first character, exactly the text streamed (the gateway's stream equals the final answer)", async () => {
    const { outcome, sent } = await respond(`\n\n  ${ANSWER}\n`);
    expect(outcome).toMatchObject({ ok: true, output: { action: "answer", text: `${ANSWER}\n` } });
    expect(sent.map((t) => t.delta).join("")).toBe(`${ANSWER}\n`);
  });

  it(`an answer over ${LIMITS.maxTextChars} characters is cut and marked, not a failed op, and starts with exactly what streamed`, async () => {
    const { outcome, sent } = await respond("Here is everything. ".repeat(1200));
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "answer", text: expect.stringMatching(/\[\.\.\.truncated\]$/) },
    });
    const text = (outcome as { output: { text: string } }).output.text;
    expect(text.length).toBeLessThanOrEqual(LIMITS.maxTextChars);
    expect(text.startsWith(sent.map((t) => t.delta).join(""))).toBe(true);
  });

  it("a JSON tool call wrapped in a code fence is a tool call, never streamed nor taken as the answer", async () => {
    for (const content of [
      '```json\n{"tool": "web_search", "arguments": {"query": "JetStream"}}\n```',
      ' ```\n{"tool": "web_search", "arguments": {"query": "JetStream"}}\n```\n',
    ]) {
      const { outcome, sent } = await respond(content);
      expect(outcome, content).toMatchObject({
        ok: true,
        output: { action: "tool", tool: "web_search", arguments: { query: "JetStream" } },
      });
      expect(sent, content).toEqual([]);
    }
  });

  it("at zero rounds left a call of one of its tools goes to the workflow, which ends the chat with what it found (not a failed op)", async () => {
    const { outcome, sent } = await respond(
      '{"tool": "web_search", "arguments": {"query": "x"}}',
      request("Search", { tool_rounds_left: 0 }),
    );
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "web_search", arguments: { query: "x" } },
    });
    expect(sent).toEqual([]);
  });

  it("a fenced block that is not a whole tool call (a JSON answer, a call followed by prose) is the answer, given whole when the turn ends", async () => {
    for (const content of [
      '```json\n{"host": "localhost", "port": 4222}\n```',
      '```json\n{"tool": "web_search", "arguments": {"query": "x"}}\n```\nThen I will answer.',
    ]) {
      const { outcome } = await respond(content, request("Show me a NATS client config as JSON"));
      expect(outcome, content).toMatchObject({ ok: true, output: { action: "answer", text: content } });
    }
  });

  it("a tool not offered, broken JSON or the wrong shape fail model_invalid_output, retryable", async () => {
    const cases: Array<[string, ChatRespondRequest]> = [
      ['{"tool": "run_python", "arguments": {"code": "1"}}', request("Compute it")],
      ['{"tool": "web_search", "arguments": {"query": ', request("Search")],
      ['{"tool": "web_search", "args": {"query": "x"}}', request("Search")],
    ];
    for (const [content, input] of cases) {
      const { outcome, sent } = await respond(content, input);
      expect(outcome, content).toMatchObject({ ok: false, error: { code: "model_invalid_output", retryable: true } });
      expect(sent, content).toEqual([]);
    }
  });
});

describe("chat.respond's prompt", () => {
  it("gives the conversation, the brief, the offered tools and the observations; at zero rounds it offers none and asks for an answer", () => {
    const input = request("Summarise what research found", {
      brief: {
        query: "Tell me about NATS",
        task: "Summarise what research found",
        handoff_context: "the user is new to messaging",
        memory: "research_findings: NATS is a broker",
      },
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello!" },
      ],
      observations: [
        { tool: "web_search", arguments: { query: "NATS" }, ok: false, content: "tool_unavailable: no web search" },
      ],
      tool_rounds_left: 2,
    });
    const text = renderRespond(input);
    for (const part of [
      "user: Hi",
      "assistant: Hello!",
      "Your task:\nSummarise what research found",
      "The user's query:\nTell me about NATS",
      "the user is new to messaging",
      "research_findings: NATS is a broker",
      "(2 tool round(s) left)",
      "- web_search: Search the web",
      '[1] web_search {"query":"NATS"} failed:\ntool_unavailable',
    ]) {
      expect(text).toContain(part);
    }
    const last = renderRespond({ ...input, tool_rounds_left: 0 });
    expect(last).not.toContain("- web_search");
    expect(last).toContain("No tools this turn: answer now");
  });
});

describe("chat.respond offline", () => {
  const run = (input: ChatRespondRequest) =>
    createOpRunner(chat, offlineModelOf([chat]), { log, prompts })(task(input), signal());

  it("greets back, thanks back, and otherwise says it needs a model and how to configure one, never calling a tool", async () => {
    expect(await run(request("Hello!"))).toMatchObject({
      ok: true,
      output: { action: "answer", text: expect.stringMatching(/^Hello! /) },
    });
    expect(await run(request("thanks a lot"))).toMatchObject({
      ok: true,
      output: { action: "answer", text: expect.stringMatching(/^You're welcome!/) },
    });
    const other = await run(request("Search the web for the latest NATS release"));
    expect(other).toMatchObject({
      ok: true,
      output: { action: "answer", text: expect.stringMatching(/^I cannot answer this without a language model\./) },
    });
    expect((other as { output: { text: string } }).output.text).toContain("AGENTMESH_LLM_BASE_URL");
  });
});
