import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  LIMITS,
  MAX_TOKEN_DELTA_CHARS,
  SessionEvent,
  type AgentAction,
  type ChatRespondRequest,
  type SpecialistAnswer,
  type SpecialistRequest,
} from "@agentmesh/contracts";
import { createOfflineModel, type ModelPort } from "@agentmesh/llm";
import { createScriptedModel } from "@agentmesh/llm/testing";
import { createTokenDedup, type TokenEvent } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { createOpRunner } from "./agent.js";
import { defineAgent, type HandlerContext, type OpSpec } from "./definition.js";
import { offlineHandlersOf } from "./offline.js";
import type { PromptContract } from "./prompts.js";
import {
  TEXT_CUT_MARKER,
  TOKEN_COALESCING,
  cutModelText,
  keptOnly,
  proseOnly,
  splitDelta,
  tokenStreamer,
} from "./tokens.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = new Map<string, PromptContract>([
  ["chat.chitchat", { id: "chat.chitchat", version: 1, focus: "Talk.", system: "Be brief." }],
  [
    "chat.respond",
    {
      id: "chat.respond",
      version: 1,
      focus: "Answer or call a tool.",
      system: "Answer, or reply with a tool call as JSON.",
    },
  ],
]);
const SID = "sesstokens0001";
const task = (taskId = `${SID}.4.2.1`) => ({
  task_id: taskId,
  session_id: SID,
  role: "chat",
  op: "chitchat",
  attempt: 1,
  input: { question: "Tell me about NATS" },
});
const REPLY = "NATS is a messaging system; JetStream adds persistence to it, and core NATS is fire-and-forget.";
const toAnswer = (text: string): SpecialistAnswer => ({ response_str: text, citations: [] });

type ChatOp = OpSpec<SpecialistRequest, SpecialistAnswer>;
type RespondOp = OpSpec<ChatRespondRequest, AgentAction>;
/** A streamed text op that answers in prose or calls a tool with a JSON reply (as chat.respond does); its JSON is never published. */
const respondOp: RespondOp = {
  contract: "chat.respond",
  output: "text",
  stream: true,
  streamOnlyProse: true,
  render: (i) => i.brief.task,
  toOutput: (text) =>
    text.trim().startsWith("{")
      ? { action: "tool", ...(JSON.parse(text) as { tool: string; arguments: Record<string, unknown> }) }
      : { action: "answer", text: text.trim() },
  summarize: (o) => o.action,
};
const chatAgent = (op: ChatOp, respond: RespondOp = respondOp) =>
  defineAgent({ role: "chat", description: "test", ops: { chitchat: op, respond } });
const textOp = (stream: boolean, offline?: (i: SpecialistRequest) => string, toOutput = toAnswer): ChatOp => ({
  contract: "chat.chitchat",
  output: "text",
  stream,
  render: (i) => `Message: ${i.question}`,
  toOutput,
  summarize: (o) => `${o.response_str.length} chars`,
  ...(offline ? { offline } : {}),
});

/** Where each message's text would start if the messages cover their run's text end to end. */
const offsetsOf = (ts: readonly TokenEvent[]) =>
  ts.map((_, i) => ts.slice(0, i).reduce((n, t) => n + t.delta.length, 0));

/** Runs one task, recording token messages and the moment the outcome came back on one timeline. */
async function run(op: ChatOp, model: ModelPort, sink?: (t: TokenEvent) => void, t = task()) {
  const timeline: Array<{ kind: "token"; t: TokenEvent } | { kind: "result" }> = [];
  const tokens = sink ?? ((x: TokenEvent) => void timeline.push({ kind: "token", t: x }));
  const outcome = await createOpRunner(chatAgent(op), model, { log, prompts, tokens })(t, new AbortController().signal);
  timeline.push({ kind: "result" });
  const sent = timeline.flatMap((e) => (e.kind === "token" ? [e.t] : []));
  return { outcome, timeline, sent };
}

describe("a streaming text op", () => {
  it("publishes each delta of a multi-chunk reply as a token message, numbered in order, before its result", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: REPLY, chunkDelayMs: 2 }]);
    const { outcome, timeline, sent } = await run(textOp(true), model);
    expect(outcome).toMatchObject({
      ok: true,
      output: toAnswer(REPLY),
      provenance: { model: "scripted", prompt_version: "chat.chitchat/v1" },
    });
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(timeline.at(-1)).toEqual({ kind: "result" });
    expect(sent.map((t) => t.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.map((t) => t.delta).join("")).toBe(REPLY);
    for (const t of sent) {
      // every message is a valid token event of the contracts, on the task's identity
      expect(SessionEvent.safeParse(t).success).toBe(true);
      expect(t).toMatchObject({
        type: "token",
        session_id: SID,
        task_id: `${SID}.4.2.1`,
        role: "chat",
        op: "chitchat",
        attempt: 1,
        version: 4,
        index: 2,
      });
    }
    expect(model.calls).toEqual([expect.objectContaining({ mode: "text" })]);
  });

  it("a redelivered task streams again from seq 0, and the client's de-dup shows each delta once", async () => {
    // the scripted model answers a repeated task id with the same entry, as a replayed call would
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: REPLY }]);
    const first = await run(textOp(true), model);
    const again = await run(textOp(true), model);
    // each run's messages cover its text end to end, wherever the time cut them
    for (const r of [first, again]) expect(r.sent.map((t) => t.offset)).toEqual(offsetsOf(r.sent));
    const dedup = createTokenDedup();
    const shown = [...first.sent, ...again.sent].flatMap((t) => dedup.admit(t) ?? []);
    expect(shown).toEqual(first.sent);
    expect(shown.map((t) => t.delta).join("")).toBe(REPLY);
  });

  it("a crash mid-stream, then a redelivery: the client shows the rest of the text, not its start again", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: REPLY }]);
    const whole = (await run(textOp(true), model)).sent;
    const dedup = createTokenDedup();
    expect(whole.length).toBeGreaterThanOrEqual(2);
    const seenBeforeCrash = whole.slice(0, 1).flatMap((t) => dedup.admit(t) ?? []);
    const afterRedelivery = whole.flatMap((t) => dedup.admit(t) ?? []);
    expect([...seenBeforeCrash, ...afterRedelivery].map((t) => t.delta).join("")).toBe(REPLY);
    expect(afterRedelivery[0]?.offset).toBe(whole[1]?.offset);
  });

  it("splits a delta longer than a token message holds (the offline engine answers in one piece)", async () => {
    const long = `${"word ".repeat(1700)}end`;
    // the answer keeps what its schema allows; the stream carries the whole text
    const op = textOp(
      true,
      () => long,
      (text) => toAnswer(text.slice(0, 4000)),
    );
    const { outcome, sent } = await run(op, createOfflineModel({ handlers: offlineHandlersOf([chatAgent(op)]) }));
    expect(outcome).toMatchObject({ ok: true, output: { response_str: long.slice(0, 4000) } });
    expect(sent.length).toBe(Math.ceil(long.length / MAX_TOKEN_DELTA_CHARS));
    expect(sent.every((t) => t.delta.length <= MAX_TOKEN_DELTA_CHARS)).toBe(true);
    expect(sent.map((t) => t.delta).join("")).toBe(long);
  });

  it("goes on when publishing fails: tokens are best-effort, the result is the truth", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: REPLY }]);
    let tried = 0;
    const { outcome } = await run(textOp(true), model, () => {
      tried++;
      throw new Error("connection closed");
    });
    expect(tried).toBeGreaterThanOrEqual(2);
    expect(outcome).toMatchObject({ ok: true, output: toAnswer(REPLY) });
  });

  it("text that toOutput cannot make a valid response fails model_invalid_output, retryable", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: "   " }]);
    const { outcome } = await run(textOp(true), model);
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: "model_invalid_output", retryable: true, component: "chat" },
    });
  });
});

describe("a streaming op that streams prose only (streamOnlyProse)", () => {
  const brief = { query: "q", task: "q", handoff_context: null, memory: "" };
  const respondTask = (taskId = `${SID}.5.0.0`) => ({
    task_id: taskId,
    session_id: SID,
    role: "chat",
    op: "respond",
    attempt: 0,
    input: {
      brief,
      messages: [],
      tools: [{ name: "web_search", description: "search" }],
      observations: [],
      tool_rounds_left: 2,
    },
  });
  const runRespond = async (content: string, taskId?: string) => {
    const sent: TokenEvent[] = [];
    const model = createScriptedModel([{ role: "chat", op: "respond", content }]);
    const outcome = await createOpRunner(chatAgent(textOp(true)), model, {
      log,
      prompts,
      tokens: (t) => void sent.push(t),
    })(respondTask(taskId), new AbortController().signal);
    return { outcome, sent };
  };
  const PROSE = `\n\n  ${REPLY}`;
  const TOOL_CALL = '\n {"tool": "web_search", "arguments": {"query": "NATS JetStream persistence"}}';

  it("streams prose from its first character (the answer's text exactly, the held leading whitespace left out), in order and from seq 0", async () => {
    const { outcome, sent } = await runRespond(PROSE);
    expect(outcome).toMatchObject({ ok: true, output: { action: "answer", text: REPLY } });
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.map((t) => t.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.map((t) => t.delta).join("")).toBe(REPLY);
    expect(sent[0]).toMatchObject({ op: "respond", task_id: `${SID}.5.0.0` });
  });

  it("publishes nothing of a reply that is a JSON object (a tool call), though the task succeeds", async () => {
    const { outcome, sent } = await runRespond(TOOL_CALL);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "web_search", arguments: { query: "NATS JetStream persistence" } },
    });
    expect(sent).toEqual([]);
  });

  it("a redelivered prose task numbers its tokens the same way, so the client shows the text once", async () => {
    const first = await runRespond(PROSE, `${SID}.6.0.0`);
    const again = await runRespond(PROSE, `${SID}.6.0.0`);
    expect(again.sent.map((t) => t.delta).join("")).toBe(first.sent.map((t) => t.delta).join(""));
    const dedup = createTokenDedup();
    expect(
      [...first.sent, ...again.sent]
        .flatMap((t) => dedup.admit(t) ?? [])
        .map((t) => t.delta)
        .join(""),
    ).toBe(REPLY);
  });
});

describe("tokenStreamer: deltas coalesced by time and size", () => {
  afterEach(() => void vi.useRealTimers());
  const streamTask = { task_id: `${SID}.4.2.1`, session_id: SID, role: "chat", op: "chitchat", attempt: 1 };

  it("a delta every 5 ms goes out as a message at most every 50 ms, the first at once; flush sends the rest", async () => {
    vi.useFakeTimers();
    const sent: Array<TokenEvent & { at: number }> = [];
    const s = tokenStreamer(streamTask, (t) => void sent.push({ ...t, at: Date.now() }), log);
    const start = Date.now();
    let text = "";
    for (let i = 0; i < 100; i++) {
      const d = `w${i} `;
      text += d;
      s.onToken(d);
      await vi.advanceTimersByTimeAsync(5);
    }
    await s.flush();
    expect(sent.map((t) => t.delta).join("")).toBe(text);
    expect(sent[0]).toMatchObject({ delta: "w0 ", offset: 0, seq: 0, at: start });
    expect(sent.map((t) => t.offset)).toEqual(offsetsOf(sent));
    expect(sent.map((t) => t.seq)).toEqual(sent.map((_, i) => i));
    // 500 ms of deltas: about one message per 50 ms, not 100
    expect(sent.length).toBeGreaterThanOrEqual(9);
    expect(sent.length).toBeLessThanOrEqual(12);
    for (let i = 1; i < sent.length - 1; i++)
      expect(sent[i]!.at - sent[i - 1]!.at).toBeGreaterThanOrEqual(TOKEN_COALESCING.ms);
  });

  it("256 characters held go out at once; a half surrogate pair waits for its other half", async () => {
    vi.useFakeTimers();
    const sent: TokenEvent[] = [];
    const s = tokenStreamer(streamTask, (t) => void sent.push(t), log);
    s.onToken("a");
    s.onToken("b".repeat(255));
    expect(sent.map((t) => t.delta.length)).toEqual([1]);
    s.onToken("c");
    expect(sent.map((t) => t.delta.length)).toEqual([1, 256]);
    await vi.advanceTimersByTimeAsync(60);
    s.onToken("x\ud83d");
    await vi.advanceTimersByTimeAsync(60);
    s.onToken("\ude00y");
    await s.flush();
    expect(sent.map((t) => t.delta).slice(2)).toEqual(["x", "\ud83d\ude00y"]);
  });

  it("flush waits for the messages to be stored, but not past its bound", async () => {
    vi.useFakeTimers();
    let storedAt = -1;
    const slow = (ms: number) => () => new Promise<void>((r) => setTimeout(() => ((storedAt = Date.now()), r()), ms));
    const t0 = Date.now();
    const s = tokenStreamer(streamTask, slow(30), log);
    s.onToken("hi");
    const done = s.flush();
    await vi.advanceTimersByTimeAsync(30);
    await done;
    expect(storedAt - t0).toBe(30);
    const hung = tokenStreamer(streamTask, () => new Promise<void>(() => {}), log);
    hung.onToken("hi");
    let flushed = false;
    void hung.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(TOKEN_COALESCING.flushWaitMs - 1);
    expect(flushed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(flushed).toBe(true);
  });
});

describe("proseOnly", () => {
  const feed = (deltas: string[]) => {
    const out: string[] = [];
    const push = proseOnly((d) => void out.push(d));
    for (const d of deltas) push(d);
    return out;
  };
  it("holds whitespace until the first character decides: prose flushes what was held from its first character on (the answer starts there), then passes deltas on", () => {
    expect(feed([" ", "\n", " Hel", "lo", " there"])).toEqual(["Hel", "lo", " there"]);
    expect(feed(["Hi"])).toEqual(["Hi"]);
  });
  it("drops a JSON object wrapped in a code fence, however finely it is cut; fenced code that is not an object is prose", () => {
    const fenced = '\n```json\n{"tool": "web_search", "arguments": {"query": "x"}}\n```';
    expect(feed([...fenced])).toEqual([]);
    expect(feed(["```", "\n", "  {", '"tool"'])).toEqual([]);
    expect(feed(["``", "`python\npr", "int(1)\n```"])).toEqual(["```python\npr", "int(1)\n```"]);
    expect(feed(["`ls` lists files"])).toEqual(["`ls` lists files"]);
  });
  it("drops every delta of a reply that starts with {, and publishes nothing for whitespace alone", () => {
    expect(feed(["  ", '{"tool"', ': "x", "arguments": {}}', " trailing prose"])).toEqual([]);
    expect(feed([" ", "\n"])).toEqual([]);
  });
});

describe("ops that do not stream publish no tokens", () => {
  it("a text op without stream: true", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: REPLY }]);
    const { outcome, sent } = await run(textOp(false), model);
    expect(outcome).toMatchObject({ ok: true, output: toAnswer(REPLY) });
    expect(sent).toEqual([]);
  });

  it("a JSON prompt op", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", output: toAnswer(REPLY) }]);
    const op: ChatOp = { contract: "chat.chitchat", render: (i) => i.question, summarize: () => "s" };
    const { outcome, sent } = await run(op, model);
    expect(outcome).toMatchObject({ ok: true, output: toAnswer(REPLY) });
    expect(sent).toEqual([]);
    expect(model.calls).toEqual([expect.objectContaining({ mode: "structured" })]);
  });
});

describe("a handler op's completeText", () => {
  const handler = (body: (ctx: HandlerContext) => Promise<string>): ChatOp => ({
    kind: "handler",
    version: "h1",
    contract: "chat.chitchat",
    run: async (_i, ctx) => toAnswer(await body(ctx)),
    summarize: () => "s",
  });

  it("streams when asked, numbering on across its calls; a call without stream publishes nothing", async () => {
    const model = createScriptedModel([
      { role: "chat", op: "chitchat", content: "First part of the text, streamed." },
      { role: "chat", op: "chitchat", content: "Not streamed, used internally." },
      { role: "chat", op: "chitchat", content: "Second streamed part." },
    ]);
    // the scripted model hands a repeated task id the same entry: each call gets its own task id here
    const calls: string[] = [];
    const wrapped: ModelPort = {
      name: model.name,
      complete: ((req: Parameters<ModelPort["complete"]>[0]) => {
        calls.push(req.prompt);
        return model.complete({ ...req, taskId: `${req.taskId}-${calls.length}` } as never);
      }) as ModelPort["complete"],
    };
    const op = handler(async (ctx) => {
      const a = await ctx.completeText({ prompt: "one", stream: true });
      const b = await ctx.completeText({ prompt: "two" });
      const c = await ctx.completeText({ prompt: "three", stream: true, system: "own system" });
      return `${a} ${b} ${c}`;
    });
    const { outcome, sent } = await run(op, wrapped);
    expect(outcome).toMatchObject({
      ok: true,
      output: {
        response_str: "First part of the text, streamed. Not streamed, used internally. Second streamed part.",
      },
      provenance: { usage: { model_calls: 3 } },
    });
    expect(sent.map((t) => t.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.map((t) => t.delta).join("")).toBe("First part of the text, streamed.Second streamed part.");
    expect(calls).toEqual(["one", "two", "three"]);
  });

  it("uses the op's contract as the system prompt unless the call names its own", async () => {
    const seen: string[] = [];
    const model: ModelPort = {
      name: "echo",
      complete: (async (req: { system: string; mode?: string }) => {
        seen.push(req.system);
        if (req.mode !== "text") throw new Error("text only");
        return {
          output: "ok",
          usage: { prompt_tokens: 1, completion_tokens: 1, cost_usd: 0, model_calls: 1 },
          model: "echo",
          tier: "fast",
          latencyMs: 0,
        };
      }) as ModelPort["complete"],
    };
    await run(
      handler(
        async (ctx) =>
          `${await ctx.completeText({ prompt: "a" })} ${await ctx.completeText({ prompt: "b", system: "mine" })}`,
      ),
      model,
    );
    expect(seen).toEqual(["Be brief.", "mine"]);
  });
});

describe("splitDelta", () => {
  it("cuts at the limit without splitting a surrogate pair; empty text is no piece", () => {
    expect(splitDelta("", 4)).toEqual([]);
    expect(splitDelta("abcdefghij", 4)).toEqual(["abcd", "efgh", "ij"]);
    const pieces = splitDelta("abc😀def", 4);
    expect(pieces.join("")).toBe("abc😀def");
    expect(pieces[0]).toBe("abc");
    expect(pieces.every((p) => z.string().max(4).safeParse(p).success)).toBe(true);
  });
});

describe("cutModelText and keptOnly", () => {
  it("a text within LIMITS.maxTextChars is whole; a longer one keeps its start, marked, and no more of it streams, however it is cut into deltas", () => {
    expect(cutModelText("short")).toBe("short");
    const long = "😀".repeat(10_500);
    const cut = cutModelText(long);
    expect(cut.length).toBeLessThanOrEqual(LIMITS.maxTextChars);
    expect(cut.endsWith(TEXT_CUT_MARKER)).toBe(true);
    for (const size of [1, 7, 4000, long.length]) {
      const out: string[] = [];
      const push = keptOnly((d) => void out.push(d));
      for (let i = 0; i < long.length; i += size) push(long.slice(i, i + size));
      expect(cut.startsWith(out.join("")), `deltas of ${size}`).toBe(true);
      expect(out.join("").length, `deltas of ${size}`).toBeGreaterThanOrEqual(cut.length - TEXT_CUT_MARKER.length - 1);
    }
  });
});
