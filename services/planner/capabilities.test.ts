import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import { AgentmeshError, Capability, type CapabilitiesRequest, type TaskOutcome } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel, offlineModelOf, scriptedHttpModel, type ScriptEntry } from "../../test/setup/model.js";
import { planCapabilities, renderCapabilities } from "./capabilities.js";
import planner from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const ALL = Capability.options;
const input: CapabilitiesRequest = {
  question: "Which pathways does HER2 interact with, and what do our documents say?",
  available: ["graph", "rag"],
};
const task = (i: CapabilitiesRequest = input) => ({
  task_id: "sesscaps0001.1.0.0",
  session_id: "sesscaps0001",
  role: "planner",
  op: "capabilities",
  attempt: 0,
  input: i,
});

/** Runs planner.capabilities against a scripted model answering `entry`; returns the outcome and the model's calls. */
async function plan(entry: Omit<ScriptEntry, "role" | "op">) {
  const model = createScriptedModel([{ role: "planner", op: "capabilities", ...entry } as ScriptEntry]);
  const outcome = await createOpRunner(planner, model, { log, prompts })(task(), new AbortController().signal);
  return { outcome, calls: model.calls };
}

const expectOneJsonObjectCallAtZero = (calls: ReturnType<typeof createScriptedModel>["calls"]) => {
  expect(calls).toHaveLength(1);
  expect(calls[0]).toMatchObject({ role: "planner", op: "capabilities", mode: "json_object", temperature: 0 });
};

describe("planner.capabilities (planner)", () => {
  it("returns a valid plan in the model's order, after exactly one json_object call at temperature 0", async () => {
    const { outcome, calls } = await plan({ content: '{"capabilities":["graph","rag"]}' });
    expect(outcome).toMatchObject({
      ok: true,
      output: { capabilities: ["graph", "rag"], invalid_reason: null },
      provenance: { prompt_version: "planner.capabilities/v1" },
    });
    expectOneJsonObjectCallAtZero(calls);
  });

  it("keeps the order and repeats as the model gave them (the workflow de-duplicates)", async () => {
    const { outcome, calls } = await plan({ output: { capabilities: ["rag", "graph", "rag"] } });
    expect(outcome).toMatchObject({
      ok: true,
      output: { capabilities: ["rag", "graph", "rag"], invalid_reason: null },
    });
    expectOneJsonObjectCallAtZero(calls);
  });

  it("`not-json`: no tags and why, as a normal result (the workflow falls back to chitchat), after one call", async () => {
    const { outcome, calls } = await plan({ content: "not-json" });
    expect(outcome.ok).toBe(true);
    const output = (outcome as Extract<TaskOutcome, { ok: true }>).output as {
      capabilities: string[];
      invalid_reason: string;
    };
    expect(output.capabilities).toEqual([]);
    expect(output.invalid_reason).toMatch(/JSON/i);
    expect(output.invalid_reason.length).toBeLessThanOrEqual(500);
    expectOneJsonObjectCallAtZero(calls);
  });

  it('`{"capabilities":["unknown"]}`: the schema rejects the tag; no tags and why, after one call', async () => {
    const { outcome, calls } = await plan({ content: '{"capabilities":["unknown"]}' });
    expect(outcome).toMatchObject({
      ok: true,
      output: { capabilities: [], invalid_reason: expect.stringMatching(/capabilities/) },
    });
    expectOneJsonObjectCallAtZero(calls);
  });

  it("a transport failure fails the task with its own code, after one call", async () => {
    const { outcome, calls } = await plan({
      error: { code: "model_error", message: "connection reset by the endpoint", retryable: true },
    });
    expect(outcome).toMatchObject({ ok: false, error: { code: "model_error", component: "planner" } });
    expectOneJsonObjectCallAtZero(calls);
  });

  it("clips a long reason to 500 characters", async () => {
    const complete = () =>
      Promise.reject(
        new AgentmeshError("model_invalid_output", `the model's output failed validation: ${"x".repeat(2000)}`, {
          retryable: false,
        }),
      );
    const out = await planCapabilities(input, { complete });
    expect(out.capabilities).toEqual([]);
    expect(out.invalid_reason).toHaveLength(500);
    expect(out.invalid_reason?.endsWith("…")).toBe(true);
  });
});

describe("planner.capabilities prompt", () => {
  it("its prompt file lists the six tags, one line each", () => {
    const system = prompts.get("planner.capabilities")?.system ?? "";
    for (const tag of ALL)
      expect(
        system.split("\n").filter((l) => l.startsWith(`- ${tag}:`)),
        tag,
      ).toHaveLength(1);
    expect(system).toContain('{"capabilities": [');
  });

  it("the user message has the question and the available tags, chitchat always among them", () => {
    expect(renderCapabilities(input)).toBe(
      `Question: ${input.question}\n\nAvailable capabilities: graph, rag, chitchat`,
    );
    expect(renderCapabilities({ question: "Hi", available: ["chitchat", "web"] })).toBe(
      "Question: Hi\n\nAvailable capabilities: chitchat, web",
    );
  });
});

describe("planner.capabilities through the OpenAI-compatible adapter", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it("uses the planner.capabilities model entry (the fast tier), sends temperature 0 and json_object, in one request", async () => {
    const { model, server } = await scriptedHttpModel(
      [{ role: "planner", op: "capabilities", output: { capabilities: ["graph"] } }],
      {
        roles: {
          planner: { model: "m-standard", temperature: 0.7, tier: "standard" },
          "planner.capabilities": { model: "m-mini", temperature: 0.5, tier: "fast" },
        },
        defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" },
      },
    );
    close = () => server.close();
    const outcome = await createOpRunner(planner, model, { log, prompts })(task(), new AbortController().signal);
    expect(outcome).toMatchObject({
      ok: true,
      output: { capabilities: ["graph"], invalid_reason: null },
      provenance: { tier: "fast" },
    });
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]).toMatchObject({ responseFormat: "json_object", body: { model: "m-mini", temperature: 0 } });
  });

  it("invalid JSON from the endpoint is not asked again: one request, no tags and why", async () => {
    const { model, server } = await scriptedHttpModel([{ role: "planner", op: "capabilities", content: "not-json" }], {
      roles: {},
      defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" },
    });
    close = () => server.close();
    const outcome = await createOpRunner(planner, model, { log, prompts })(task(), new AbortController().signal);
    expect(outcome).toMatchObject({
      ok: true,
      output: { capabilities: [], invalid_reason: expect.stringMatching(/not retried/) },
    });
    expect(server.calls).toHaveLength(1);
  });
});

describe("planner.capabilities offline", () => {
  it("picks by cue words among the available tags (offline-kit), in one model call of the offline engine", async () => {
    const run = createOpRunner(planner, offlineModelOf([planner]), { log, prompts });
    expect(await run(task(), new AbortController().signal)).toMatchObject({
      ok: true,
      output: { capabilities: ["graph", "rag"], invalid_reason: null },
    });
    const latest = {
      question: "What is the latest news about HER2 trials?",
      available: ["graph", "rag", "web"] as Capability[],
    };
    expect(await run(task(latest), new AbortController().signal)).toMatchObject({
      ok: true,
      output: { capabilities: ["web"] },
    });
    expect(await run(task({ question: "Hello there!", available: ALL }), new AbortController().signal)).toMatchObject({
      ok: true,
      output: { capabilities: ["chitchat"] },
    });
  });
});
