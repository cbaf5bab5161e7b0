import { z } from "zod";
import { ApiError } from "./http.js";

// A Chat Completions request as the gateway reads it. Each field is honoured, accepted and ignored,
// or refused with a 400 that names it (docs/gateway.md, "Compatibility"): a workflow answers one
// question with text, so fields that ask for several choices, a client-side tool call, a schema'd
// reply, token probabilities or audio cannot be met and say so; sampling and length settings, which
// clients send by default, are accepted and have no effect (the workflow's agents sample as
// configured, and its budgets bound its answer).

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
export const Message = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: z.union([z.string(), z.array(Part), z.null()]).optional(),
});
export type Message = z.infer<typeof Message>;

const ToolChoice = z.union([z.string(), z.looseObject({ type: z.string().optional() })]);

/** The request: OpenAI's shape; fields not named here are accepted and ignored. */
export const ChatRequest = z.looseObject({
  model: z.string().min(1).max(100),
  messages: z.array(Message).min(1, "messages must hold at least the user's message").max(1000),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  metadata: z.record(z.string(), z.string().max(512)).nullish(),
  n: z.number().int().min(1).nullish(),
  tool_choice: ToolChoice.nullish(),
  function_call: ToolChoice.nullish(),
  response_format: z.looseObject({ type: z.string() }).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).nullish(),
  modalities: z.array(z.string()).nullish(),
  audio: z.unknown().optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

/** Fields accepted and ignored (documented; the compatibility suite sends each). */
export const IGNORED_FIELDS = [
  "temperature",
  "top_p",
  "seed", // the sampler's random seed
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "stop",
  "max_tokens",
  "max_completion_tokens",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "service_tier",
  "store",
  "parallel_tool_calls",
  "reasoning_effort",
  "verbosity",
  "prediction",
  "tools",
  "functions",
] as const;

/** Why a request's fields cannot be honoured: the first such field, or null. */
export function unsupported(req: ChatRequest): { param: string; message: string } | null {
  if ((req.n ?? 1) > 1) return { param: "n", message: "only one choice is answered: n must be 1" };
  for (const [param, choice] of [
    ["tool_choice", req.tool_choice],
    ["function_call", req.function_call],
  ] as const) {
    if (choice === undefined || choice === null || choice === "auto" || choice === "none") continue;
    return {
      param,
      message: `the workflow never calls the client's tools, so ${param} ${JSON.stringify(typeof choice === "string" ? choice : (choice.type ?? "object"))} cannot be honoured; omit it or send "auto" or "none"`,
    };
  }
  const format = req.response_format?.type;
  if (format !== undefined && format !== "text")
    return { param: "response_format", message: `answers are text: response_format "${format}" is not supported` };
  if (req.logprobs === true)
    return { param: "logprobs", message: "token log probabilities are not available: logprobs must be false" };
  if ((req.top_logprobs ?? 0) > 0)
    return { param: "top_logprobs", message: "token log probabilities are not available: top_logprobs must be 0" };
  if (req.modalities?.some((m) => m !== "text"))
    return { param: "modalities", message: 'answers are text only: modalities may hold only "text"' };
  if (req.audio !== undefined && req.audio !== null)
    return { param: "audio", message: "answers are text only: audio output is not available, so omit audio" };
  return null;
}

/** Refuses a request with a field it cannot honour: `400 unsupported_parameter` naming the field. */
export function refuseUnsupported(req: ChatRequest): void {
  const u = unsupported(req);
  if (u) throw new ApiError("unsupported_parameter", u.message, {}, u.param);
}
