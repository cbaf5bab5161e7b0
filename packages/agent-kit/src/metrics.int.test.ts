import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  AgentmeshError,
  InboxInput,
  naming as makeNaming,
  SCHEMA_VERSION,
  taskId,
  type ChatRespondRequest,
  type AgentAction,
  type Naming,
  type SpecialistAnswer,
} from "@agentmesh/contracts";
import { createScriptedModel } from "@agentmesh/llm/testing";
import { connectNats, createPublisher, provision } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { loadAgentConfig } from "./config.js";
import { defineAgent, type OpSpec } from "./definition.js";
import { startAgentsInProcess } from "./main.js";
import type { PromptContract } from "./prompts.js";
import { metricSample as sample } from "@agentmesh/service-kit/testing";

// An agent process with metrics on (port 0) over a real NATS server: its /metrics endpoint,
// scraped over HTTP, shows the tasks it worked, their redeliveries, the model's tokens and cost,
// and its consumer's backlog.

const log = createLogger({ service: "test", level: "silent" });
const prompts = new Map<string, PromptContract>([
  ["chat.chitchat", { id: "chat.chitchat", version: 1, focus: "Talk.", system: "Be brief." }],
]);
const toAnswer = (text: string): SpecialistAnswer => ({ response_str: text, citations: [] });
const respond: OpSpec<ChatRespondRequest, AgentAction> = {
  contract: "chat.chitchat",
  output: "text",
  render: (i) => i.brief.task,
  toOutput: (text) => ({ action: "answer", text }),
  summarize: () => "s",
};
/** A chat role whose first run of a task fails retryably after its model call (JetStream then redelivers it). */
function flakyChat() {
  const failed = new Set<string>();
  return defineAgent({
    role: "chat",
    description: "test",
    ops: {
      chitchat: {
        kind: "handler",
        version: "h1",
        contract: "chat.chitchat",
        run: async (i, ctx) => {
          const text = await ctx.completeText({ prompt: i.question });
          if (i.question.includes("flaky") && !failed.has(ctx.taskId)) {
            failed.add(ctx.taskId);
            throw new AgentmeshError("model_error", "the endpoint dropped the connection");
          }
          return toAnswer(text);
        },
        summarize: () => "s",
      },
      respond,
    },
  });
}
const chat = defineAgent({
  role: "chat",
  description: "test",
  ops: {
    chitchat: {
      contract: "chat.chitchat",
      output: "text",
      render: (i) => i.question,
      toOutput: toAnswer,
      summarize: () => "s",
    },
    respond,
  },
});

let nc: NatsConnection;
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "agent-kit-metrics" });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nc.drain();
});

async function freshNaming(): Promise<Naming> {
  const naming = makeNaming(uniquePrefix("met"));
  await provision(nc, {
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
    const jsm = await jetstreamManager(nc);
    for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
      await jsm.streams.delete(s).catch(() => false);
  });
  return naming;
}

const until = async (cond: () => boolean | Promise<boolean>, what: string) => {
  for (const end = Date.now() + 15_000; !(await cond());) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("an agent process with AGENTMESH_METRICS_PORT=0", () => {
  it("serves /metrics over HTTP; counters move as it works tasks, and its consumer's lag is there", async () => {
    const naming = await freshNaming();
    const cfg = loadAgentConfig({
      NATS_URL: inject("natsUrl"),
      AGENTMESH_PREFIX: naming.prefix,
      AGENTMESH_METRICS_PORT: "0",
      AGENTMESH_METRICS_HOST: "127.0.0.1",
      AGENTMESH_TASK_ACK_WAIT_MS: "3000",
      AGENTMESH_TASK_MAX_DELIVER: "3",
      AGENTMESH_AGENT_CONCURRENCY: "1",
    });
    const model = createScriptedModel(
      [
        {
          role: "chat",
          op: "chitchat",
          content: "Hello there.",
          usage: { prompt_tokens: 30, completion_tokens: 5, cost_usd: 0.25 },
        },
        {
          role: "chat",
          op: "chitchat",
          content: "Hi again.",
          usage: { prompt_tokens: 20, completion_tokens: 4, cost_usd: 0.5 },
        },
      ],
      { model: "gpt-test" },
    );
    const running = await startAgentsInProcess([flakyChat()], cfg, { nc, log, model, prompts });
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await running.stop(500);
    });
    expect(running.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const url = running.metricsUrl ?? "";
    const scrape = async () => {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      return res.text();
    };

    const before = await scrape();
    expect(sample(before, "agentmesh_tasks_total", { role: "chat", op: "chitchat", outcome: "completed" })).toBeNull();
    expect(
      sample(before, "agentmesh_consumer_pending_messages", { stream: naming.streams.tasks, consumer: "role_chat" }),
    ).toBe(0);
    expect(sample(before, "agentmesh_tasks_in_flight", { role: "chat" })).toBe(0);

    const results: InboxInput[] = [];
    const sub = nc.subscribe(`${naming.prefix}.inbox.>`, {
      callback: (_e, m) => void results.push(InboxInput.parse(m.json())),
    });
    cleanups.push(async () => sub.unsubscribe());
    const publisher = createPublisher(nc, naming, log, { client: true });
    const sid = `sess${randomBytes(6).toString("hex")}`;
    const task = (index: number, deadlineAt: number | null) => ({
      v: SCHEMA_VERSION,
      task_id: taskId(sid, 2, index, 0),
      session_id: sid,
      role: "chat" as const,
      op: "chitchat" as const,
      attempt: 0,
      deadline_at: deadlineAt,
      input: { question: index === 0 ? "a flaky question?" : `question ${index}?` },
    });
    // the first fails retryably once after its model call, then completes on its redelivery; the
    // second completes; the third is past its deadline and is not worked
    await publisher.publishTask(task(0, null));
    await until(() => results.length === 1, "the first result");
    await publisher.publishTask(task(1, null));
    await publisher.publishTask(task(2, Date.now() - 1000));
    await until(() => results.length === 3, "three results");

    // a result reaches the inbox just before its task is acked and counted
    const chitchat = { role: "chat", op: "chitchat" };
    let text = "";
    await until(async () => {
      text = await scrape();
      return (
        sample(text, "agentmesh_tasks_total", { ...chitchat, outcome: "completed" }) === 2 &&
        sample(text, "agentmesh_tasks_total", { ...chitchat, outcome: "dropped" }) === 1
      );
    }, "the counters of three settled tasks");
    expect(sample(text, "agentmesh_tasks_total", { ...chitchat, outcome: "completed" })).toBe(2);
    expect(sample(text, "agentmesh_tasks_total", { ...chitchat, outcome: "redelivered" })).toBe(1);
    expect(sample(text, "agentmesh_tasks_total", { ...chitchat, outcome: "dropped" })).toBe(1);
    expect(sample(text, "agentmesh_tasks_total", { ...chitchat, outcome: "failed" })).toBeNull();
    expect(sample(text, "agentmesh_redeliveries_total", { consumer: "role_chat" })).toBe(1);
    expect(sample(text, "agentmesh_task_duration_seconds_count", chitchat)).toBe(3);
    const byModel = { ...chitchat, model: "gpt-test" };
    // the flaky task called the model on both of its deliveries: each call is counted and costs
    expect(sample(text, "agentmesh_model_calls_total", byModel)).toBe(3);
    expect(sample(text, "agentmesh_model_input_tokens_total", byModel)).toBe(30 + 30 + 20);
    expect(sample(text, "agentmesh_model_output_tokens_total", byModel)).toBe(5 + 5 + 4);
    expect(sample(text, "agentmesh_model_cost_usd_total", byModel)).toBe(1);
    expect(
      sample(text, "agentmesh_consumer_pending_messages", { stream: naming.streams.tasks, consumer: "role_chat" }),
    ).toBe(0);
    expect(
      sample(text, "agentmesh_consumer_ack_pending_messages", { stream: naming.streams.tasks, consumer: "role_chat" }),
    ).toBe(0);
    expect(text).toContain("nodejs_heap_size_used_bytes");
    // no session or task id ever becomes a label value
    expect(text).not.toContain(sid);

    // closed on drain
    stopped = true;
    await running.stop(500);
    await expect(fetch(url)).rejects.toThrow();
  });

  it("shows the backlog waiting for the role and the task it works", async () => {
    const naming = await freshNaming();
    const publisher = createPublisher(nc, naming, log, { client: true });
    const sid = `sess${randomBytes(6).toString("hex")}`;
    for (let i = 0; i < 3; i++) {
      await publisher.publishTask({
        v: SCHEMA_VERSION,
        task_id: taskId(sid, 2, i, 0),
        session_id: sid,
        role: "chat",
        op: "chitchat",
        attempt: 0,
        deadline_at: null,
        input: { question: "waiting?" },
      });
    }
    const cfg = loadAgentConfig({
      NATS_URL: inject("natsUrl"),
      AGENTMESH_PREFIX: naming.prefix,
      AGENTMESH_METRICS_PORT: "0",
      AGENTMESH_TASK_ACK_WAIT_MS: "3000",
      AGENTMESH_TASK_MAX_DELIVER: "3",
    });
    // one slot and a model that takes its time: one task is leased, two wait on the server
    const model = createScriptedModel(
      [0, 1, 2].map(() => ({ role: "chat", op: "chitchat", content: "late", delayMs: 60_000 })),
    );
    const { metricsUrl, stop } = await startAgentsInProcess(
      [chat],
      { ...cfg, concurrency: 1 },
      { nc, log, model, prompts },
    );
    cleanups.push(() => stop(0));
    const scrape = async () => (await fetch(metricsUrl ?? "")).text();
    const consumer = { stream: naming.streams.tasks, consumer: "role_chat" };
    await until(
      async () => sample(await scrape(), "agentmesh_consumer_ack_pending_messages", consumer) === 1,
      "one task leased",
    );
    const text = await scrape();
    expect(sample(text, "agentmesh_consumer_pending_messages", consumer)).toBe(2);
    expect(sample(text, "agentmesh_tasks_in_flight", { role: "chat" })).toBe(1);
  });
});
