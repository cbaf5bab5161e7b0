import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { SessionState, WorkflowName, type HaloCitation } from "@agentmesh/contracts";
import { SESSION_RESULT_FIELDS, apiKeyEntry, createGatewayApp, generateApiKey, parseApiKeys } from "@agentmesh/gateway";
import { createLogger } from "@agentmesh/service-kit";
import { createLocalSessionStore } from "@agentmesh/session-store/testing";
import { createSession } from "@agentmesh/workflows";
import { DEFAULTS } from "@agentmesh/workflows/testing";
import { sessionResultRows, tableRows, workflowOptionRows } from "../../scripts/doc-tables.js";

// What GET /api/v1/sessions/:id answers per workflow (its `result`), through the HTTP app over a
// stored session, and the docs page's tables against the code's.

const root = join(import.meta.dirname, "../..");
const page = readFileSync(join(root, "docs/session-results.md"), "utf8");
const KEY = generateApiKey();
const T0 = 1_700_000_000_000;
const cite: HaloCitation = {
  title: "JetStream",
  url: "https://docs.nats.io/jetstream",
  path: null,
  snippet: "streams",
};

/** A session of `workflow` after its start, its data changed by `over` (checked against the contracts). */
function stored(workflow: WorkflowName, sid: string, over: Record<string, unknown>, owner = "alice"): SessionState {
  const s = createSession({
    sessionId: sid,
    workflow,
    query: "What is JetStream?",
    options: {},
    now: T0,
    defaults: DEFAULTS,
    owner,
  });
  return SessionState.parse({ ...s, meta: { ...s.meta, status: "completed" }, data: { ...s.data, ...over } });
}

async function resultOf(state: SessionState): Promise<Record<string, unknown>> {
  const store = createLocalSessionStore({
    keyPrefix: "docs",
    activeTtlMs: 60_000,
    finishedTtlMs: 60_000,
    idempotencyTtlMs: 60_000,
  });
  await store.create(state);
  // Reading a session touches only the store and the key check.
  const { app } = createGatewayApp({
    nc: {} as never,
    naming: {} as never,
    store,
    limits: {} as never,
    log: createLogger({ service: "test", level: "silent" }),
    submitTimeoutMs: 1000,
    publisher: { publishInbox: async () => {} },
    keys: parseApiKeys({ inline: apiKeyEntry("alice", KEY) }),
    anonymous: false,
    defaultWorkflow: "supervisor",
    maxBodyBytes: 4096,
    ready: async () => true,
  });
  const r = await app.request(`/api/v1/sessions/${state.meta.session_id}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { workflow: string; result: Record<string, unknown> };
  expect(body.workflow).toBe(state.meta.workflow);
  return body.result;
}

const report = {
  plan_version: 1,
  step_index: 0,
  retry: 0,
  report: {
    quality: 0.9,
    hallucination_risk: 0.1,
    issues: [],
    is_acceptable: true,
    rewrite_suggestion: null,
    requires_human_input: false,
    question_for_human: null,
  },
};
const decision = (iteration: number, next_agent: "clarification" | "research") => ({
  iteration,
  layer: "model",
  next_agent,
  clarification_count: next_agent === "research" ? 0 : 1,
  max_clarifications: 2,
  reason: "the model decided",
});
const chart = { mark: "bar", data: { values: [{ a: 1 }] } };
const handoff = { source_agent: "chat", target_agent: "data", task_description: "Chart it", context: null };

/** Per workflow: the data a finished session holds, and the `result` it must show. */
const CASES: Record<WorkflowName, { data: Record<string, unknown>; result: Record<string, unknown> }> = {
  "critic-chain": {
    data: { final_answer: "JetStream is NATS's persistence.", final_reasoning_trace: "plan, research, expert" },
    result: { final_answer: "JetStream is NATS's persistence.", final_reasoning_trace: "plan, research, expert" },
  },
  halo: {
    data: { response_str: "JetStream persists [1].", judge_response: "rag scored 3", citations: [cite] },
    result: { response_str: "JetStream persists [1].", judge_response: "rag scored 3", citations: [cite] },
  },
  blackboard: {
    data: {
      final_answer: "Streams store messages.",
      citations: [{ path: "corpus/jetstream.md", passage: "streams" }],
      critic_reports: [{ ...report, report: { ...report.report, quality: 0.4 } }, report],
    },
    result: {
      final_answer: "Streams store messages.",
      citations: [{ path: "corpus/jetstream.md", passage: "streams" }],
      last_critic_report: report,
    },
  },
  supervisor: {
    data: {
      response: "Here is the chart.",
      selected_agent: "chat",
      routing_reason: "small talk first",
      routing_confidence: 0.42,
      is_low_confidence: true,
      active_agent: "data",
      handoff_count: 1,
      handoff_history: [handoff],
      handoff_summary: "Handoffs: 1 of 3.\n1. chat → data: Chart it",
      visited_agents: ["chat", "data"],
      shared_memory: { data_visualizations: [chart] },
      provider: "openai",
      model: "gpt-4o-mini",
      tier: "fast",
      image_attachments: [{ url: "https://example.org/a.png" }],
    },
    result: {
      response: "Here is the chart.",
      routing: { agent: "chat", confidence: 0.42, reason: "small talk first", is_low_confidence: true },
      handoff_history: [handoff],
      handoff_count: 1,
      handoff_summary: "Handoffs: 1 of 3.\n1. chat → data: Chart it",
      visited_agents: ["chat", "data"],
      visualizations: [chart],
      user_id: "alice",
      provider: "openai",
      model: "gpt-4o-mini",
      tier: "fast",
      image_attachments: [{ url: "https://example.org/a.png" }],
    },
  },
  clarify: {
    data: {
      final_answer: "JetStream persists [1].",
      citations: [cite],
      clarification_count: 0,
      decisions: [decision(1, "clarification"), decision(2, "research")],
    },
    result: {
      final_answer: "JetStream persists [1].",
      citations: [cite],
      clarification_count: 0,
      last_decision: decision(2, "research"),
    },
  },
};

describe("GET /api/v1/sessions/:id: each workflow's answer fields under `result`", () => {
  test.each(WorkflowName.options)("%s", async (workflow) => {
    const c = CASES[workflow];
    const result = await resultOf(stored(workflow, `docs-${workflow}-0001`, c.data));
    expect(result).toEqual(c.result);
    expect(Object.keys(result)).toEqual(Object.keys(SESSION_RESULT_FIELDS[workflow]));
  });

  test("before they are known the fields are null or empty; the supervisor's routing is null until routed", async () => {
    const fresh = (workflow: WorkflowName) => resultOf(stored(workflow, `docs-${workflow}-0002`, {}));
    expect(await fresh("critic-chain")).toEqual({ final_answer: null, final_reasoning_trace: null });
    expect(await fresh("halo")).toEqual({ response_str: null, judge_response: null, citations: [] });
    expect(await fresh("blackboard")).toMatchObject({ final_answer: null, last_critic_report: null });
    expect(await fresh("clarify")).toMatchObject({ final_answer: null, clarification_count: 0, last_decision: null });
    expect(await fresh("supervisor")).toMatchObject({
      response: null,
      routing: null,
      handoff_history: [],
      visited_agents: [],
      handoff_summary: "No handoffs.",
      visualizations: [],
      user_id: "alice",
      provider: null,
    });
  });
});

describe("docs/session-results.md matches the code", () => {
  test("the workflow options table lists exactly WORKFLOW_OPTIONS", () => {
    expect(tableRows(page, "workflow-options")).toEqual(workflowOptionRows());
  });

  test.each(WorkflowName.options)("the %s result table lists exactly its fields", (workflow) => {
    expect(tableRows(page, `session-result-${workflow}`), `no table:session-result-${workflow}`).toEqual(
      sessionResultRows(workflow),
    );
  });
});
