import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  AgentmeshError,
  InboxInput,
  naming as makeNaming,
  SCHEMA_VERSION,
  SessionEvent,
  taskId,
  type AgentAction,
  type ChatRespondRequest,
  type Naming,
  type SpecialistAnswer,
} from "@agentmesh/contracts";
import { createScriptedModel } from "@agentmesh/llm/testing";
import { connectNats, createPublisher, followTokens, provision, type TokenDelta } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { startAgent } from "./agent.js";
import { defineAgent, type OpSpec } from "./definition.js";
import type { PromptContract } from "./prompts.js";

// An agent role running as its process runs it (startAgent: JetStream consumer, inbox result),
// over a real NATS server: its streamed tokens reach a client before its result reaches the inbox.

const log = createLogger({ service: "test", level: "silent" });
const prompts = new Map<string, PromptContract>([
  ["chat.chitchat", { id: "chat.chitchat", version: 1, focus: "Talk.", system: "Be brief." }],
]);
const REPLY =
  "Streaming over NATS: each delta is a core message on the session's token subject, sent while the model writes.";
const toAnswer = (text: string): SpecialistAnswer => ({ response_str: text, citations: [] });
/** The chat role's other op, which these tests never send a task. */
const respond: OpSpec<ChatRespondRequest, AgentAction> = {
  contract: "chat.chitchat",
  output: "text",
  render: (i) => i.brief.task,
  toOutput: (text) => ({ action: "answer", text }),
  summarize: () => "s",
};

let agentNc: NatsConnection;
let clientNc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  agentNc = await connectNats({ url: inject("natsUrl"), name: "agent-kit-tokens-agent" });
  clientNc = await connectNats({ url: inject("natsUrl"), name: "agent-kit-tokens-client" });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await agentNc.drain();
  await clientNc.drain();
});

async function freshNaming(): Promise<Naming> {
  const naming = makeNaming(uniquePrefix("tok"));
  await provision(agentNc, {
    naming,
    roles: ["chat"],
    taskAckWaitMs: 3000,
    taskMaxDeliver: 3,
    inboxAckWaitMs: 1000,
    inboxMaxDeliver: 3,
    eventsMaxAgeMs: 60_000,
    duplicateWindowMs: 10_000,
    maxAckPendingPerRole: 4,
  });
  cleanups.push(async () => {
    const jsm = await jetstreamManager(agentNc);
    for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
      await jsm.streams.delete(s).catch(() => false);
  });
  return naming;
}

type Seen = { kind: "token"; t: TokenDelta } | { kind: "raw"; t: TokenDelta } | { kind: "result"; input: InboxInput };

/** Follows a session as a client would: de-duplicated tokens, raw token messages and inbox results, on one timeline. */
async function watch(naming: Naming, sid: string) {
  const timeline: Seen[] = [];
  const untokens = followTokens(clientNc, naming, sid, (t) => timeline.push({ kind: "token", t }));
  const raw = clientNc.subscribe(naming.sessionTokens(sid), {
    callback: (_e, m) => {
      const e = SessionEvent.parse(m.json());
      if (e.type === "token") timeline.push({ kind: "raw", t: e });
    },
  });
  const inbox = clientNc.subscribe(naming.inbox(sid, "chat"), {
    callback: (_e, m) => void timeline.push({ kind: "result", input: InboxInput.parse(m.json()) }),
  });
  await clientNc.flush();
  cleanups.push(async () => {
    untokens();
    raw.unsubscribe();
    inbox.unsubscribe();
  });
  return timeline;
}

async function submit(naming: Naming, sid: string) {
  await createPublisher(clientNc, naming, log, { client: true }).publishTask({
    v: SCHEMA_VERSION,
    task_id: taskId(sid, 2, 0, 0),
    session_id: sid,
    role: "chat",
    op: "chitchat",
    attempt: 0,
    deadline_at: null,
    input: { question: "How do tokens travel?" },
  });
}

const sessionId = () => `sess${randomBytes(6).toString("hex")}`;
const until = async (cond: () => boolean, what: string) => {
  for (const end = Date.now() + 15_000; !cond();) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

/**
 * Starts a chat agent whose streamed text op chitchat the scripted model answers with `content`
 * (`chunkDelayMs` between deltas), submits one task and waits for its result; returns the
 * session's timeline of tokens and inbox inputs.
 */
async function streamedChitchat(content: string, chunkDelayMs: number, flags: { streamOnlyProse?: boolean } = {}) {
  const naming = await freshNaming();
  const model = createScriptedModel([{ role: "chat", op: "chitchat", content, chunkDelayMs }]);
  const agent = defineAgent({
    role: "chat",
    description: "test",
    ops: {
      chitchat: {
        contract: "chat.chitchat",
        output: "text",
        stream: true,
        ...flags,
        render: (i) => i.question,
        toOutput: toAnswer,
        summarize: () => "s",
      },
      respond,
    },
  });
  const running = await startAgent(agent, {
    nc: agentNc,
    naming,
    model,
    log,
    concurrency: 1,
    ackWaitMs: 3000,
    maxDeliver: 3,
    prompts,
  });
  cleanups.push(() => running.stop(500));
  const sid = sessionId();
  const timeline = await watch(naming, sid);
  await submit(naming, sid);
  await until(() => timeline.some((e) => e.kind === "result"), "the result");
  return { sid, timeline };
}

describe("a streaming op run by startAgent over NATS", () => {
  it("publishes its deltas on <p>.tokens.<sid>.<role>; followTokens receives them in order before the result reaches the inbox", async () => {
    const { sid, timeline } = await streamedChitchat(REPLY, 10);

    const firstResult = timeline.findIndex((e) => e.kind === "result");
    const tokens = timeline.flatMap((e) => (e.kind === "token" ? [e.t] : []));
    const before = timeline.slice(0, firstResult).filter((e) => e.kind === "token");
    expect(before.length).toBeGreaterThanOrEqual(2);
    expect(before.length).toBe(tokens.length);
    expect(tokens.map((t) => t.seq)).toEqual(tokens.map((_, i) => i));
    expect(tokens.map((t) => t.delta).join("")).toBe(REPLY);
    expect(tokens[0]).toMatchObject({
      session_id: sid,
      task_id: taskId(sid, 2, 0, 0),
      role: "chat",
      op: "chitchat",
      attempt: 0,
    });
    expect(timeline[firstResult]).toMatchObject({
      kind: "result",
      input: { kind: "result", outcome: { ok: true, output: toAnswer(REPLY) } },
    });
  });

  it("a prose-only op whose model replies with a JSON object (a tool call) puts nothing on the token subject; its result still comes", async () => {
    const call = '{"tool": "web_search", "arguments": {"query": "how tokens travel"}}';
    const { timeline } = await streamedChitchat(call, 5, { streamOnlyProse: true });
    // tokens go out before the result on the agent's one connection: none came, none will
    expect(timeline.filter((e) => e.kind !== "result")).toEqual([]);
    expect(timeline[0]).toMatchObject({ kind: "result", input: { outcome: { ok: true, output: toAnswer(call) } } });
  });

  it("a task redelivered after streaming streams again; the client's followTokens shows its text once", async () => {
    const naming = await freshNaming();
    const model = createScriptedModel([{ role: "chat", op: "chitchat", content: REPLY }]);
    let runs = 0;
    const agent = defineAgent({
      role: "chat",
      description: "test",
      ops: {
        chitchat: {
          kind: "handler",
          version: "h1",
          contract: "chat.chitchat",
          run: async (_i, ctx) => {
            const text = await ctx.completeText({ prompt: "answer", stream: true });
            // the first delivery fails after its text went out (a retryable fault): JetStream redelivers the task
            if (++runs === 1) throw new AgentmeshError("model_error", "the endpoint dropped the connection");
            return toAnswer(text);
          },
          summarize: () => "s",
        },
        respond,
      },
    });
    const running = await startAgent(agent, {
      nc: agentNc,
      naming,
      model,
      log,
      concurrency: 1,
      ackWaitMs: 3000,
      maxDeliver: 3,
      prompts,
    });
    cleanups.push(() => running.stop(500));
    const sid = sessionId();
    const timeline = await watch(naming, sid);
    await submit(naming, sid);
    await until(() => timeline.some((e) => e.kind === "result"), "the result");

    expect(runs).toBe(2);
    const raw = timeline.flatMap((e) => (e.kind === "raw" ? [e.t] : []));
    const shown = timeline.flatMap((e) => (e.kind === "token" ? [e.t] : []));
    // on the wire the text went out twice, numbered from 0 each time; the client saw it once
    expect(raw.map((t) => t.delta).join("")).toBe(REPLY + REPLY);
    expect(raw.filter((t) => t.seq === 0)).toHaveLength(2);
    expect(shown.map((t) => t.delta).join("")).toBe(REPLY);
    expect(timeline.find((e) => e.kind === "result")).toMatchObject({
      input: { outcome: { ok: true, output: toAnswer(REPLY) } },
    });
  });
});
