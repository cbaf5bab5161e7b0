import { afterEach, describe, expect, it } from "vitest";
import { createModelFromConfig, type ModelConfig } from "./config.js";
import { DEFAULT_MAX_HTTP_ATTEMPTS, maxModelRequestsPerCall } from "./openai.js";
import { startScriptedOpenAIServer, type ScriptedServer } from "./scripted-server.js";
import { planRequest } from "./test-support.js";

const config: ModelConfig = {
  roles: {},
  defaultRole: { model: "m", temperature: 0, tier: "standard" },
  timeoutMs: 5_000,
  maxHttpAttempts: 2,
  prices: { m: { input_per_mtok: 1, output_per_mtok: 1 } },
};

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("createModelFromConfig", () => {
  it("is the offline engine when no endpoint is configured", async () => {
    for (const baseURL of [undefined, "", "  "]) {
      const model = createModelFromConfig({ ...config, baseURL });
      expect(model.name).toBe("offline");
    }
    // the offline behaviours it answers with are the ones injected (each role brings its own)
    const handlers = new Map([
      ["planner.plan", () => ({ research_steps: [], expert_steps: ["Evaluate 2 + 2 exactly"] })],
    ]);
    const reply = await createModelFromConfig({ ...config, offlineHandlers: handlers }).complete(planRequest);
    expect(reply.output.expert_steps[0]).toMatch(/2 \+ 2/);
    await expect(createModelFromConfig(config).complete(planRequest)).rejects.toMatchObject({ code: "needs_model" });
  });

  it("is the OpenAI-compatible adapter when an endpoint is set", async () => {
    server = await startScriptedOpenAIServer({
      script: [{ role: "planner", op: "plan", output: { research_steps: [], expert_steps: ["Add"] } }],
    });
    const model = createModelFromConfig({ ...config, baseURL: server.url, apiKey: "k" });
    expect(model.name).toMatch(/^openai-compatible/);
    expect((await model.complete(planRequest)).output).toEqual({ research_steps: [], expert_steps: ["Add"] });
    server.assertConsumed();
  });

  it("names itself without the endpoint's credentials (the name is in logs and $SRV metadata)", () => {
    const model = createModelFromConfig({ ...config, baseURL: "http://user:llm-pw-31337@127.0.0.1:1/v1", apiKey: "k" });
    expect(model.name).toBe("openai-compatible http://user:***@127.0.0.1:1/v1");
  });
});

describe("call bound", () => {
  it("documents the bound: two exchanges of maxHttpAttempts each", () => {
    expect(DEFAULT_MAX_HTTP_ATTEMPTS).toBe(3);
    expect(maxModelRequestsPerCall()).toBe(6);
    expect(maxModelRequestsPerCall(1)).toBe(2);
  });
});
