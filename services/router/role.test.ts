import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createOpRunner, loadAgentConfig, loadPromptContracts } from "@agentmesh/agent-kit";
import type { RouteRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import {
  createScriptedModel,
  offlineModelOf,
  scriptedHttpModel,
  type ScriptEntry,
  ONE_CALL_FAILURES,
  oneCallAgainst,
} from "../../test/setup/model.js";
import router, { renderRoute } from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const request = (query: string, messages: RouteRequest["messages"] = []): RouteRequest => ({ query, messages });
const task = (input: RouteRequest) => ({
  task_id: "sessroute0001.1.0.0",
  session_id: "sessroute0001",
  role: "router",
  op: "route",
  attempt: 0,
  input,
});
const signal = () => new AbortController().signal;

/** Runs router.route against a scripted model answering `entry`. */
async function route(
  entry: Omit<ScriptEntry, "role" | "op">,
  input = request("Write a Python function that reverses a list"),
) {
  const model = createScriptedModel([{ role: "router", op: "route", ...entry } as ScriptEntry]);
  const outcome = await createOpRunner(router, model, { log, prompts })(task(input), signal());
  return { outcome, calls: model.calls };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe("router.route with a model", () => {
  it("returns the model's validated routing after one json_object call at temperature 0 on the fast tier", async () => {
    const { outcome, calls } = await route({
      content: '{"agent":"code","confidence":0.92,"reason":"asks for a Python function"}',
    });
    expect(outcome).toMatchObject({
      ok: true,
      output: { agent: "code", confidence: 0.92, reason: "asks for a Python function" },
      provenance: { prompt_version: "router.route/v1" },
    });
    expect(calls).toEqual([
      expect.objectContaining({ role: "router", op: "route", mode: "json_object", temperature: 0, tier: "fast" }),
    ]);
  });

  it("output that is not a RoutingResult fails model_invalid_output (an unknown agent, a confidence over 1, not JSON)", async () => {
    for (const content of [
      '{"agent":"search","confidence":0.9,"reason":"r"}',
      '{"agent":"chat","confidence":1.5,"reason":"r"}',
      "chat, I think",
    ]) {
      const { outcome, calls } = await route({ content });
      expect(outcome, content).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
      expect(calls, content).toHaveLength(1);
    }
  });

  it("without a router entry in AGENTMESH_ROLE_MODELS it uses the fast tier's model; an entry naming it wins", async () => {
    const defaults = {
      defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" as const },
      tiers: { fast: { model: "m-flash", temperature: 0.2, tier: "fast" as const } },
    };
    const answer = { role: "router", op: "route", output: { agent: "data", confidence: 0.8, reason: "a CSV" } };
    for (const [roles, model, tier] of [
      [{}, "m-flash", "fast"],
      [{ router: { model: "m-router", temperature: 0.1, tier: "standard" as const } }, "m-router", "standard"],
    ] as const) {
      const http = await scriptedHttpModel([answer], { ...defaults, roles });
      close = () => http.server.close();
      const outcome = await createOpRunner(router, http.model, { log, prompts })(
        task(request("Chart this CSV")),
        signal(),
      );
      expect(outcome).toMatchObject({ ok: true, output: { agent: "data" }, provenance: { model, tier } });
      expect(http.server.calls).toEqual([
        expect.objectContaining({
          responseFormat: "json_object",
          body: expect.objectContaining({ model, temperature: 0 }),
        }),
      ]);
      await close();
      close = undefined;
    }
  });

  it("the agent configuration's fast tier is AGENTMESH_FAST_MODEL, else the default model", () => {
    expect(loadAgentConfig({ AGENTMESH_LLM_MODEL: "m-big", AGENTMESH_FAST_MODEL: "m-flash" }).llm.tiers.fast).toEqual({
      model: "m-flash",
      temperature: 0.2,
      tier: "fast",
    });
    expect(loadAgentConfig({ AGENTMESH_LLM_MODEL: "m-big" }).llm.tiers.fast).toMatchObject({
      model: "m-big",
      tier: "fast",
    });
  });
});

describe("router.route offline (cue words)", () => {
  const run = createOpRunner(router, offlineModelOf([router]), { log, prompts });
  it("routes a coding question to code, a CSV question to data, a greeting to chat", async () => {
    const cases = [
      ["How do I debug this Python script that throws a KeyError?", "code"],
      ["Here is a CSV of sales by month: which month sold most?", "data"],
      ["hi", "chat"],
    ] as const;
    for (const [query, agent] of cases) {
      const out = await run(task(request(query)), signal());
      expect(out, query).toMatchObject({ ok: true, output: { agent, reason: expect.any(String) } });
    }
  });
});

describe("renderRoute", () => {
  it("gives the latest query and only the last turns, each clipped", () => {
    const turns = Array.from({ length: 10 }, (_, i) => ({
      role: i % 2 ? ("assistant" as const) : ("user" as const),
      content: `turn ${i} ${"x".repeat(600)}`,
    }));
    const text = renderRoute(request("And in JavaScript?", turns));
    expect(text).toMatch(/Latest query: And in JavaScript\?$/);
    expect(text).not.toContain("turn 3 ");
    expect(text).toContain("turn 4 ");
    expect(text).toContain("…");
    expect(renderRoute(request("hi"))).toBe("Earlier turns:\n(none)\n\nLatest query: hi");
  });
});

describe("router.route is one model call: the workflow falls back to chat on any failure", () => {
  it.each(ONE_CALL_FAILURES)(
    "$what: one request, reported at once as a failure no redelivery retries",
    async ({ entry }) => {
      const { result, requests } = await oneCallAgainst("router", "route", entry, (model) =>
        createOpRunner(router, model, { log, prompts })(task(request("Chart this CSV")), signal()),
      );
      expect(requests).toBe(1);
      expect(result).toMatchObject({ ok: false, error: { retryable: false } });
    },
  );
});
