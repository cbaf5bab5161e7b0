import { AgentmeshError, compiled, formatZodError } from "@agentmesh/contracts";
import { z } from "zod";
import { delay } from "./delay.js";
import { forwardDelta } from "./stream.js";
import type { ModelPort, ModelReply, ModelRequest } from "./types.js";

/**
 * One op's offline behaviour: a deterministic answer computed from the request's structured
 * input (no clock, no randomness). It may throw a typed error (e.g. `needs_model`).
 */
export type OfflineHandler = (input: unknown, signal: AbortSignal | undefined) => unknown;

/** Options for the offline engine. */
export interface OfflineModelOptions {
  /**
   * The offline behaviours this process can answer, keyed `<role>.<op>`. The engine knows no
   * role: each role brings its own handler, and a key without one answers `needs_model`.
   */
  readonly handlers?: ReadonlyMap<string, OfflineHandler>;
  /**
   * How to configure a real model, quoted when a request needs one. The default names the
   * service env vars; a deployment with other settings passes its own sentence.
   */
  readonly configHint?: string;
  /**
   * Test and bench knob: how long every answer takes, as a model's would (default 0). The wait is
   * a timer inside the engine, cut short by the request's abort signal.
   */
  readonly latencyMs?: number;
}

/** The default configuration hint quoted in "needs a language model" answers. */
export const DEFAULT_CONFIG_HINT =
  "To use a language model, set AGENTMESH_LLM_BASE_URL to an OpenAI-compatible endpoint " +
  "(for example http://localhost:11434/v1 for Ollama), and AGENTMESH_LLM_API_KEY if it needs a key, then restart agentmesh.";

/** The key of an op's offline handler. */
export const offlineKey = (role: string, op: string): string => `${role}.${op}`;

/**
 * The offline engine: the default model when no endpoint is configured. It is a model adapter
 * over injected handlers (each role's own offline behaviour); it validates what a handler
 * returns against the requested schema, exactly as a real model's reply is validated.
 */
export function createOfflineModel(opts: OfflineModelOptions = {}): ModelPort {
  const hint = opts.configHint ?? DEFAULT_CONFIG_HINT;
  const handlers = opts.handlers ?? new Map<string, OfflineHandler>();
  const latencyMs = opts.latencyMs ?? 0;
  if (!Number.isFinite(latencyMs) || latencyMs < 0)
    throw new AgentmeshError("internal", `offline engine: latencyMs must be a non-negative number, got ${latencyMs}`);
  return {
    name: "offline",
    async complete<T>(req: ModelRequest<T>): Promise<ModelReply<T>> {
      if (req.signal?.aborted) throw new AgentmeshError("cancelled", "the model call was cancelled before it started");
      const handler = handlers.get(offlineKey(req.role, req.op));
      if (!handler)
        throw new AgentmeshError(
          "needs_model",
          `the offline engine cannot answer ${req.role}.${req.op}; a language model is needed. ${hint}`,
        );
      const started = performance.now();
      if (latencyMs > 0) await delay(latencyMs, req.signal);
      const raw = await handler(req.input, req.signal);
      // free text (mode "text") is a string, delivered as one delta; the other modes are validated like a model's reply
      const output = (req.mode === "text" ? z.string() : compiled(req.schema)).safeParse(raw);
      if (!output.success)
        throw new AgentmeshError(
          "internal",
          `offline engine: its ${req.role}.${req.op} output failed the requested schema: ${formatZodError(output.error)}`,
        );
      if (req.mode === "text" && req.onToken && typeof output.data === "string") forwardDelta(req.onToken, output.data);
      return {
        output: output.data as T,
        usage: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 },
        model: "offline",
        tier: "fast",
        latencyMs: latencyMs > 0 ? performance.now() - started : 0,
      };
    },
  };
}
