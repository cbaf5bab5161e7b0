/**
 * The orchestrator tests across the workflow and the role: the pure clarify workflow is
 * stepped as the coordinator does, and every orchestrator task it dispatches is run by the real
 * orchestrator role (its prompt file rendered with the task's variables) against a scripted model.
 * So each case counts its model calls (Layers 1 and 2 make none) and shows the prompt the model saw.
 */
import { describe, expect, it } from "vitest";
import {
  SCHEMA_VERSION,
  inputIds,
  type ChatMessage,
  type InboxInput,
  type SessionState,
  type ThreadCarry,
} from "@agentmesh/contracts";
import { createOpRunner, loadPromptContracts, type AgentDefinition } from "@agentmesh/agent-kit";
import { loadRoles } from "@agentmesh/agent";
import { createLogger } from "@agentmesh/service-kit";
import { createSession, step } from "@agentmesh/workflows";
import { DEFAULTS } from "@agentmesh/workflows/testing";
import { createScriptedModel, recordingModel } from "../setup/model.js";

const [loaded] = await loadRoles(["orchestrator"]);
const orchestrator = loaded!.module as AgentDefinition;
const prompts = loadPromptContracts({ builtinDirs: [loaded!.dir] });
const log = createLogger({ service: "test", level: "silent" });
const SID = "sessseed0030001";

/**
 * Runs a clarify session from `query` (with earlier `messages` and a carried count) until it
 * leaves the orchestrator: each orchestrator task answered by the role with the model saying
 * `reply`; a clarification question answered by the person with `personSays`.
 */
async function orchestrate(
  query: string,
  opts: { reply?: string; messages?: ChatMessage[]; carry?: ThreadCarry; personSays?: string } = {},
) {
  const model = createScriptedModel(
    Array.from({ length: 3 }, () => ({
      role: "orchestrator",
      op: "decide",
      content: opts.reply ?? "Decision: RESEARCH",
    })),
  );
  const rec = recordingModel(model);
  const run = createOpRunner(orchestrator, rec.port, { log, prompts });
  let state: SessionState = createSession({
    sessionId: SID,
    workflow: "clarify",
    query,
    options: {},
    now: 1,
    defaults: DEFAULTS,
    messages: opts.messages ?? [],
    ...(opts.carry ? { carry: opts.carry } : {}),
  });
  let now = 1;
  const apply = (input: InboxInput) => {
    const out = step(state, input, { now: ++now, defaults: DEFAULTS });
    if (out.kind !== "apply") throw new Error(`dropped: ${out.detail}`);
    state = out.state;
    return out;
  };
  let out = apply({
    v: SCHEMA_VERSION,
    kind: "start",
    session_id: SID,
    input_id: inputIds.start(SID),
    workflow: "clarify",
    query,
    options: {},
  });
  for (let i = 0; i < 6; i++) {
    const task = out.outbox.find((e) => e.kind === "task")?.task;
    if (task?.role === "orchestrator") {
      const outcome = await run(task, new AbortController().signal);
      out = apply({
        v: SCHEMA_VERSION,
        kind: "result",
        session_id: SID,
        input_id: inputIds.result(task.task_id),
        task_id: task.task_id,
        role: task.role,
        op: task.op,
        outcome,
      });
    } else if (task?.role === "clarifier" && opts.personSays !== undefined) {
      const provenance = {
        role: "clarifier",
        op: "ask",
        model: "m",
        tier: "standard" as const,
        prompt_version: "v1",
        attempt: 0,
        usage: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 1 },
        latency_ms: 1,
      };
      const outcome = {
        ok: true as const,
        output: { question: "What aspect would you like to know about?" },
        provenance,
      };
      out = apply({
        v: SCHEMA_VERSION,
        kind: "result",
        session_id: SID,
        input_id: inputIds.result(task.task_id),
        task_id: task.task_id,
        role: task.role,
        op: task.op,
        outcome,
      });
      out = apply({
        v: SCHEMA_VERSION,
        kind: "user_reply",
        session_id: SID,
        input_id: inputIds.user("reply"),
        text: opts.personSays,
      });
    } else break;
  }
  if (state.data.workflow !== "clarify") throw new Error("not clarify");
  return { data: state.data, modelCalls: model.calls.length, systems: rec.seen.map((s) => s.system) };
}

describe("the orchestrator tests, workflow and role together", () => {
  it("test_orchestrator_clarification_routing: [Human 'Tell me more about it'], count 0 → clarification, count 1; one model call", async () => {
    const r = await orchestrate("Tell me more about it", {
      reply: "Decision: CLARIFICATION\nReasoning: the pronoun has no antecedent",
    });
    expect(r.data).toMatchObject({ next_agent: "clarification", clarification_count: 1 });
    expect(r.modelCalls).toBe(1);
    expect(r.systems[0]).toContain("Conversation History:\nUser: Tell me more about it\n");
    expect(r.systems[0]).toContain("Current Clarification Count: 0/2");
  });

  it("test_orchestrator_max_clarifications: count 2 (at max) → research forced, count 0; no model call", async () => {
    const r = await orchestrate("Still unclear", {
      carry: { clarification_count: 2 },
      reply: "Decision: CLARIFICATION",
    });
    expect(r.data).toMatchObject({ next_agent: "research", clarification_count: 0 });
    expect(r.modelCalls).toBe(0);
  });

  it("test_orchestrator_pattern_detection: [AI question, Human reply], last_agent clarification, count 1 → research, count 1; no model call for the reply", async () => {
    const r = await orchestrate("Tell me more about it", {
      reply: "Decision: CLARIFICATION",
      personSays: "The implementation details",
    });
    expect(r.data.messages.slice(-2)).toEqual([
      { role: "assistant", content: "What aspect would you like to know about?" },
      { role: "user", content: "The implementation details" },
    ]);
    expect(r.data).toMatchObject({
      next_agent: "research",
      last_agent: "orchestrator",
      clarification_count: 1,
      iteration: 2,
    });
    // the one call was the query's (Layer 3); the reply went through Layer 2
    expect(r.modelCalls).toBe(1);
  });

  it("Layer 3's prompt shows the last 10 messages and count/max", async () => {
    const earlier: ChatMessage[] = Array.from({ length: 12 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `turn ${i}`,
    }));
    const r = await orchestrate("And the other one?", { messages: earlier, carry: { clarification_count: 1 } });
    const history = r.systems[0]?.split("Conversation History:\n")[1]?.split("\n\n")[0]?.split("\n") ?? [];
    expect(history).toEqual([
      ...earlier.slice(-9).map((m) => `${m.role === "user" ? "User" : "AI"}: ${m.content}`),
      "User: And the other one?",
    ]);
    expect(r.systems[0]).toContain("Current Clarification Count: 1/2");
    expect(r.data).toMatchObject({ next_agent: "research", clarification_count: 0 });
  });
});
