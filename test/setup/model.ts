// The model port for role-folder tests. A role folder may not depend on the llm package
// (ARCHITECTURE.md), but its tests may use this shared test infrastructure: the scripted model,
// the scripted OpenAI-compatible server with the real adapter in front of it, and the offline
// engine answering with the roles' own offline behaviours.
import { offlineHandlersOf, type AgentDefinition } from "@agentmesh/agent-kit";
import { createOfflineModel, createOpenAIModel, type ModelPort, type OpenAIModelOptions } from "@agentmesh/llm";
import {
  startScriptedOpenAIServer,
  type HttpScriptEntry,
  type ScriptedServer,
  type ScriptedServerOptions,
} from "@agentmesh/llm/testing";

export { createScriptedModel, type ScriptEntry, type ScriptedModel } from "@agentmesh/llm/testing";

/** The offline engine with the offline behaviours of `defs`, as an agent process without an endpoint runs it. */
export function offlineModelOf(defs: readonly AgentDefinition[]): ModelPort {
  return createOfflineModel({ handlers: offlineHandlersOf(defs) });
}

/**
 * The OpenAI-compatible adapter against a scripted HTTP server on loopback (its `/v1/embeddings`
 * as `server.embeddings` says); close the server after the test.
 */
export async function scriptedHttpModel(
  script: readonly HttpScriptEntry[],
  opts: Pick<OpenAIModelOptions, "roles" | "defaultRole"> &
    Partial<Pick<OpenAIModelOptions, "maxHttpAttempts" | "tiers">>,
  serverOpts: Pick<ScriptedServerOptions, "embeddings"> = {},
): Promise<{ model: ModelPort; server: ScriptedServer }> {
  const server = await startScriptedOpenAIServer({ script, host: "127.0.0.1", ...serverOpts });
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

/** The model failures a one-call op must survive with one request: 429, 500, a hang, garbage. */
export const ONE_CALL_FAILURES: ReadonlyArray<{
  readonly what: string;
  readonly entry: Omit<HttpScriptEntry, "role" | "op">;
}> = [
  { what: "429", entry: { status: 429, retryAfterSec: 0 } },
  { what: "500", entry: { status: 500 } },
  { what: "a hang", entry: { output: {}, delayMs: 30_000 } },
  { what: "garbage", entry: { content: "}{ not json at all" } },
];

/**
 * Runs `run` against a scripted server answering `failure` for role.op and then, should a second
 * request come, a 500 every time: the adapter may try 5 times and time out after 2 s, so any
 * retry shows as a second request. Returns what `run` returned and the requests the server saw.
 */
export async function oneCallAgainst<T>(
  role: string,
  op: string,
  failure: Omit<HttpScriptEntry, "role" | "op">,
  run: (model: ModelPort) => Promise<T>,
): Promise<{ result: T; requests: number }> {
  const again = Array.from({ length: 6 }, () => ({ role, op, status: 500 }));
  const server = await startScriptedOpenAIServer({ script: [{ role, op, ...failure }, ...again], host: "127.0.0.1" });
  try {
    const model = createOpenAIModel({
      baseURL: server.url,
      timeoutMs: 2000,
      maxHttpAttempts: 5,
      backoff: { baseMs: 1, capMs: 2 },
      roles: {},
      defaultRole: { model: "m", temperature: 0, tier: "standard" },
    });
    const result = await run(model);
    return { result, requests: server.calls.filter((c) => c.role === role && c.op === op).length };
  } finally {
    await server.close();
  }
}
