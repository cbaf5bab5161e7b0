import { createOpenAIModel } from "./openai.js";
import { runModelConformance } from "./conformance.js";
import { createScriptedModel } from "./scripted.js";
import { startScriptedOpenAIServer } from "./scripted-server.js";

runModelConformance("scripted model (the local twin)", async (answers) => {
  const model = createScriptedModel(answers.map((a) => ({ ...a })));
  return {
    model,
    requests: () => model.calls.length,
    temperatures: () => model.calls.map((c) => c.temperature),
    async close() {},
  };
});

runModelConformance("OpenAI-compatible adapter over HTTP", async (answers) => {
  const server = await startScriptedOpenAIServer({ script: answers.map((a) => ({ ...a })) });
  const model = createOpenAIModel({
    baseURL: server.url,
    roles: {},
    defaultRole: { model: "scripted", temperature: 0, tier: "standard" },
    timeoutMs: 10_000,
    maxHttpAttempts: 1,
  });
  const temperatures = () =>
    server.calls.map((c) => {
      const t = (c.body as { temperature?: unknown }).temperature;
      return typeof t === "number" ? t : null;
    });
  return { model, requests: () => server.calls.length, temperatures, close: () => server.close() };
});
