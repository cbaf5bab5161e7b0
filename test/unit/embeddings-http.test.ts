// The embeddings provider through the real `openai` client against the scripted server's
// /v1/embeddings: the vectors it answers, its batching, and its failures as typed errors.
import { afterEach, describe, expect, it } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { scriptedEmbedding, startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { createOpenAIEmbeddings } from "@agentmesh/tools";

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});
const signal = () => AbortSignal.timeout(5000);

describe("OpenAI-compatible embeddings against the scripted /v1/embeddings", () => {
  it("answers one deterministic vector per text, in order, where synonyms embed alike", async () => {
    server = await startScriptedOpenAIServer({ script: [], embeddings: { dim: 64, synonyms: { automobile: "car" } } });
    const e = createOpenAIEmbeddings({ baseUrl: server.url, model: "embed-small" });
    const [car, automobile, bread] = await e.embed(["a red car", "a red automobile", "fresh bread"], {
      signal: signal(),
    });
    expect(car).toEqual(scriptedEmbedding("a red car", { dim: 64 }));
    expect(automobile).toEqual(car);
    expect(bread).not.toEqual(car);
    expect(car).toHaveLength(64);
    expect(server.embeddingCalls).toEqual([
      { model: "embed-small", inputs: ["a red car", "a red automobile", "fresh bread"], status: 200 },
    ]);
    server.assertConsumed();
  });

  it("turns a 500 into a retryable tool error and a refused key into tool_unavailable, never echoing the key", async () => {
    server = await startScriptedOpenAIServer({ script: [], embeddings: { status: 500 } });
    const down = createOpenAIEmbeddings({ baseUrl: server.url, model: "m", apiKey: "sk-secret-123" });
    const err = await down.embed(["x"], { signal: signal() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentmeshError);
    expect(err).toMatchObject({ code: "tool_error", retryable: true });
    expect(String((err as Error).message)).toContain("the embeddings endpoint answered embedding with HTTP 500");
    expect(JSON.stringify(err)).not.toContain("sk-secret-123");
    await server.close();

    server = await startScriptedOpenAIServer({ script: [], embeddings: { status: 401 } });
    const refused = createOpenAIEmbeddings({ baseUrl: server.url, model: "m", apiKey: "sk-secret-123" });
    await expect(refused.embed(["x"], { signal: signal() })).rejects.toMatchObject({ code: "tool_unavailable" });
  });
});
