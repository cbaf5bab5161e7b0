import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { InboxInput, type SessionEvent } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { createSession, step, type RuntimeDefaults } from "@agentmesh/workflows";
import { uniquePrefix } from "../setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce } from "./harness.js";

// critic-chain with tools: only its roles and the executor run, each its own process.
// The scripted model has the researcher search the corpus and the expert call the calculator, both
// as executor.call tasks with the real tools; the answer critic rejects once, and the expert's
// retry must be handed the rejected answer beside the feedback.

const QUESTION = "How do JetStream work queues deliver tasks, and what is 12 * 12?";
const REJECTED = { expert_answer: "about 140", expert_reasoning: "Rounded the product in my head." };
const FEEDBACK = "State the exact value the calculator returned.";
const tool = (name: string, args: Record<string, unknown>) => ({
  action: "tool",
  tool: name,
  arguments_json: JSON.stringify(args),
});

const SCRIPT = [
  {
    role: "planner",
    op: "plan",
    output: {
      research_steps: ["Find how JetStream work queues deliver tasks"],
      expert_steps: ["Compute 12 * 12 exactly"],
    },
  },
  { role: "critic", op: "review_plan", output: { decision: "approve", feedback: "Fine." } },
  { role: "researcher", op: "research", output: tool("corpus_search", { query: "JetStream work queue", limit: 1 }) },
  {
    role: "researcher",
    op: "research",
    output: {
      action: "answer",
      result: "A work-queue stream hands each task to one consumer.",
      tool: "",
      arguments_json: "",
    },
  },
  { role: "critic", op: "review_research", output: { decision: "approve", feedback: "Fine." } },
  { role: "expert", op: "answer", output: tool("calculator", { expression: "12 * 12" }) },
  { role: "expert", op: "answer", output: { action: "answer", ...REJECTED, tool: "", arguments_json: "" } },
  { role: "critic", op: "review_answer", output: { decision: "reject", feedback: FEEDBACK } },
  {
    role: "expert",
    op: "answer",
    output: {
      action: "answer",
      expert_answer: "12 * 12 = 144",
      expert_reasoning: "The calculator returned 144.",
      tool: "",
      arguments_json: "",
    },
  },
  { role: "critic", op: "review_answer", output: { decision: "approve", feedback: "Exact." } },
  {
    role: "finalizer",
    op: "finalize",
    output: {
      final_answer: "One consumer per task; 12 * 12 = 144.",
      final_reasoning_trace: "Researched the corpus, computed with the calculator.",
    },
  },
];

let llm: ScriptedServer;
let cluster: Cluster;

beforeAll(async () => {
  llm = await startScriptedOpenAIServer({ script: SCRIPT });
  cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix("cct"),
    llmBaseUrl: llm.url,
  });
  await cluster.open();
  cluster.startAll(1);
  await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) }, 180_000);
}, 240_000); // seven processes start at once: slow on a shared machine

afterAll(async () => {
  await cluster?.close();
  await llm?.close();
});

/** The user prompt of a scripted model call (the last message of its request). */
function promptOf(body: unknown): string {
  const messages = (body as { messages?: Array<{ content?: unknown }> }).messages ?? [];
  return String(messages.at(-1)?.content ?? "");
}

describe("critic-chain with tools, every service its own process", () => {
  test("the researcher and the expert call tools through the executor; the rejected answer is handed back on the retry", async () => {
    const sid = await cluster.submit(QUESTION, "tools000000000000001");
    const { state, log, events } = await cluster.waitDone(sid, 120_000);
    expect(state.meta.status).toBe("completed");
    if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
    const d = state.data;
    expect(d.final_answer).toBe("One consumer per task; 12 * 12 = 144.");
    expect(d).toMatchObject({
      retry_count: 1,
      critic_expert_decision: "approve",
      expert_answer: "12 * 12 = 144",
      tool_calls: 2,
    });
    // 1 start + 11 agent results + 2 executor results
    expect(state.meta.version).toBe(14);
    assertAppliedOnce(log, state.meta.version);
    llm.assertConsumed();

    // The tool calls ran for real in the executor, announced as events with matching results.
    const ofType = <T extends SessionEvent["type"]>(t: T) =>
      events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === t);
    expect(ofType("tool_call").map((e) => e.tool)).toEqual(["corpus_search", "calculator"]);
    const results = ofType("tool_result");
    expect(results.map((r) => [r.tool, r.ok])).toEqual([
      ["corpus_search", true],
      ["calculator", true],
    ]);
    expect(results[1]?.content).toBe("144");
    expect(d.expert_state?.observations).toEqual([
      { tool: "calculator", arguments: { expression: "12 * 12" }, ok: true, content: "144" },
    ]);
    expect(d.researcher_states["0"]?.observations[0]).toMatchObject({ tool: "corpus_search", ok: true });
    expect(d.messages.filter((m) => m.type === "response").map((m) => m.sender)).toEqual([
      "planner",
      "critic_planner",
      "researcher",
      "critic_researcher",
      "expert",
      "critic_expert",
      "expert",
      "critic_expert",
      "finalizer",
    ]);

    // The expert's turn after its tool call was shown what the calculator returned.
    const expertCalls = llm.calls.filter((c) => c.taskId.startsWith(sid) && c.role === "expert");
    expect(expertCalls).toHaveLength(3);
    expect(promptOf(expertCalls[1]?.body)).toContain('calculator {"expression":"12 * 12"} returned: 144');
    // The retry's rendered prompt holds the rejected answer, its reasoning and the feedback.
    const retryPrompt = promptOf(expertCalls[2]?.body);
    expect(retryPrompt).toContain(`Your earlier answer, which the critic rejected:\n${REJECTED.expert_answer}`);
    expect(retryPrompt).toContain(REJECTED.expert_reasoning);
    expect(retryPrompt).toContain(`Critic feedback: ${FEEDBACK}`);

    // From the transition log (each input logged whole: the corpus search asked for one passage, so its result stays under LIMITS.maxLogInputChars):
    // replaying its inputs through step() dispatches the retry with the rejected answer in its request.
    const criticChain = { tools: d.tools_available, max_tool_rounds: d.max_tool_rounds }; // the deployment's settings, as the session copied them
    const defaults: RuntimeDefaults = {
      budgets: state.meta.budgets,
      ceilings: state.meta.budgets,
      taskDeadlineMs: null,
      sessionDeadlineMs: null,
      pauseTimeoutMs: null,
      criticChain,
    };
    let replayed = createSession({
      sessionId: sid,
      workflow: "critic-chain",
      query: QUESTION,
      options: {},
      now: log[0]!.now,
      defaults,
    });
    const expertRequests: unknown[] = [];
    for (const line of log) {
      const outcome = step(replayed, InboxInput.parse(line.input), { now: line.now, defaults });
      if (outcome.kind !== "apply") throw new Error(`line ${line.version} did not apply on replay: ${outcome.reason}`);
      replayed = outcome.state;
      for (const e of outcome.outbox)
        if (e.kind === "task" && e.task.role === "expert") expertRequests.push(e.task.input);
    }
    expect(replayed.data).toEqual(state.data);
    expect(expertRequests).toHaveLength(3);
    expect(expertRequests[0]).toMatchObject({ rejected_answer: null, feedback: null, tool_rounds_left: 5 });
    expect(expertRequests[2]).toMatchObject({
      rejected_answer: REJECTED,
      feedback: FEEDBACK,
      message: { content: FEEDBACK },
    });
  });
});
