// The model port for role-folder tests. A role folder may not depend on the llm package
// (ARCHITECTURE.md), but its tests may use this shared test infrastructure: the scripted model,
// the scripted OpenAI-compatible server with the real adapter in front of it, and the offline
// engine answering with the roles' own offline behaviours.
import { offlineHandlersOf, type AgentDefinition } from "@agentmesh/agent-kit";
import { createOfflineModel, createOpenAIModel, type ModelPort, type OpenAIModelOptions } from "@agentmesh/llm";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";

export { createScriptedModel, type ScriptEntry, type ScriptedModel } from "@agentmesh/llm/testing";

/** The offline engine with the offline behaviours of `defs`, as an agent process without an endpoint runs it. */
export function offlineModelOf(defs: readonly AgentDefinition[]): ModelPort {
  return createOfflineModel({ handlers: offlineHandlersOf(defs) });
}

/** The OpenAI-compatible adapter against a scripted HTTP server on loopback; close the server after the test. */
export async function scriptedHttpModel(
  script: readonly HttpScriptEntry[],
  opts: Pick<OpenAIModelOptions, "roles" | "defaultRole"> &
    Partial<Pick<OpenAIModelOptions, "maxHttpAttempts" | "tiers">>,
): Promise<{ model: ModelPort; server: ScriptedServer }> {
  const server = await startScriptedOpenAIServer({ script, host: "127.0.0.1" });
  const model = createOpenAIModel({ baseURL: server.url, timeoutMs: 5_000, ...opts });
  return { model, server };
}

/** What a recording model saw of one call: its system prompt, its user prompt and its output mode. */
export interface SeenCall {
  readonly system: string;
  readonly prompt: string;
  readonly mode: string;
}

/**
 * A model port that records each request before `model` answers it: `seen` holds each call's
 * system prompt, user prompt and mode, `prompts` just the user prompts, in call order.
 */
export function recordingModel(model: ModelPort): { port: ModelPort; seen: SeenCall[]; prompts: string[] } {
  const seen: SeenCall[] = [];
  const prompts: string[] = [];
  const port: ModelPort = {
    name: model.name,
    complete: ((req: Parameters<ModelPort["complete"]>[0]) => {
      seen.push({ system: req.system, prompt: req.prompt, mode: req.mode ?? "structured" });
      prompts.push(req.prompt);
      return model.complete(req as never);
    }) as ModelPort["complete"],
  };
  return { port, seen, prompts };
}
