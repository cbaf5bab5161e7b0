import { z } from "zod";

/** Who is at fault, which decides whether a retry can help and how it is reported. */
export const Fault = z.enum(["caller", "upstream", "timeout", "internal"]);
export type Fault = z.infer<typeof Fault>;

/** The closed set of error codes. Each has a fault class and says whether a retry can help. */
export const ERROR_CODES = {
  invalid_query: { fault: "caller", retryable: false, summary: "the query is empty, not text, or outside 3-5000 characters" },
  invalid_message: { fault: "caller", retryable: false, summary: "a message failed its schema" },
  payload_too_large: { fault: "caller", retryable: false, summary: "a message is over the 256 KB limit" },
  unsupported_version: { fault: "caller", retryable: false, summary: "the message schema version is not supported" },
  unknown_session: { fault: "caller", retryable: false, summary: "no such session" },
  unknown_workflow: { fault: "caller", retryable: false, summary: "no such workflow" },
  unknown_op: { fault: "caller", retryable: false, summary: "no such role or operation" },
  cancelled: { fault: "caller", retryable: false, summary: "the session was cancelled" },
  budget_exceeded: { fault: "caller", retryable: false, summary: "a session budget (steps, tokens, cost, wall clock) ran out" },
  model_error: { fault: "upstream", retryable: true, summary: "the model endpoint failed" },
  model_rate_limited: { fault: "upstream", retryable: true, summary: "the model endpoint rate-limited us" },
  model_invalid_output: { fault: "upstream", retryable: true, summary: "the model's output failed validation twice" },
  model_refused: { fault: "upstream", retryable: false, summary: "the model endpoint rejected the request (auth, bad model name)" },
  needs_model: { fault: "upstream", retryable: false, summary: "the offline engine cannot answer this; a model is needed" },
  tool_error: { fault: "upstream", retryable: true, summary: "a tool failed" },
  tool_not_found: { fault: "caller", retryable: false, summary: "no tool of that name is registered" },
  permission_denied: { fault: "caller", retryable: false, summary: "the caller may not do this (tool not allowed for the role, path outside the allowed roots)" },
  invalid_tool_input: { fault: "caller", retryable: false, summary: "a tool's arguments failed its input schema or name nothing it can use" },
  invalid_tool_output: { fault: "upstream", retryable: false, summary: "a tool's result failed its output schema" },
  resource_exhausted: { fault: "caller", retryable: false, summary: "code run by a tool went over its memory or output limit" },
  tool_unavailable: { fault: "upstream", retryable: false, summary: "the tool has no backend configured (e.g. no web search provider)" },
  sandbox_unavailable: { fault: "upstream", retryable: false, summary: "the isolation a code runner needs is not available here, so the code was not run" },
  timeout: { fault: "timeout", retryable: true, summary: "an operation took longer than its limit" },
  deadline_exceeded: { fault: "timeout", retryable: false, summary: "the task or session deadline passed" },
  unavailable: { fault: "upstream", retryable: true, summary: "NATS or Redis could not be reached" },
  internal: { fault: "internal", retryable: false, summary: "a bug in agentmesh" },
} as const satisfies Record<string, { fault: Fault; retryable: boolean; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export const ErrorCode = z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]);

/** An error as it travels on the wire. */
export const WireError = z.object({
  code: ErrorCode,
  message: z.string().max(4000),
  retryable: z.boolean(),
  component: z.string().max(100).nullable(),
});
export type WireError = z.infer<typeof WireError>;

/** Builds a wire error with the code's default retryability. */
export function wireError(code: ErrorCode, message: string, component: string | null = null): WireError {
  return { code, message: message.slice(0, 4000), retryable: ERROR_CODES[code].retryable, component };
}
