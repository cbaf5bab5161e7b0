import { z } from "zod";
import { redactUrls } from "./redact.js";

/** Who is at fault, which decides whether a retry can help and how it is reported. */
export const Fault = z.enum(["caller", "upstream", "timeout", "internal"]);
export type Fault = z.infer<typeof Fault>;

/** The closed set of error codes. Each has a fault class and says whether a retry can help. */
export const ERROR_CODES = {
  invalid_query: {
    fault: "caller",
    retryable: false,
    summary:
      "the query is empty, not text, shorter than its workflow's minimum (3 characters for the blackboard's, 1 otherwise) or over 5000 characters",
  },
  invalid_config: {
    fault: "caller",
    retryable: false,
    summary: "the service configuration (environment) is invalid; every problem is listed",
  },
  invalid_message: {
    fault: "caller",
    retryable: false,
    summary: "a message failed its schema or nests JSON deeper than 64 levels",
  },
  payload_too_large: { fault: "caller", retryable: false, summary: "a message is over the 256 KB limit" },
  unsupported_version: { fault: "caller", retryable: false, summary: "the message schema version is not supported" },
  unknown_session: { fault: "caller", retryable: false, summary: "no such session" },
  unknown_thread: { fault: "caller", retryable: false, summary: "no such thread (or it belongs to another API key)" },
  unknown_workflow: { fault: "caller", retryable: false, summary: "no such workflow" },
  unknown_op: { fault: "caller", retryable: false, summary: "no such role or operation" },
  cancelled: { fault: "caller", retryable: false, summary: "the session was cancelled" },
  budget_exceeded: {
    fault: "caller",
    retryable: false,
    summary: "a session budget (steps, tokens, cost, wall clock) ran out",
  },
  model_error: { fault: "upstream", retryable: true, summary: "the model endpoint failed" },
  model_rate_limited: { fault: "upstream", retryable: true, summary: "the model endpoint rate-limited us" },
  model_invalid_output: {
    fault: "upstream",
    retryable: true,
    summary: "the model's output failed validation (twice in structured mode; once, not retried, in json_object mode)",
  },
  model_refused: {
    fault: "upstream",
    retryable: false,
    summary: "the model endpoint rejected the request (auth, bad model name)",
  },
  needs_model: {
    fault: "upstream",
    retryable: false,
    summary: "the offline engine cannot answer this; a model is needed",
  },
  tool_error: { fault: "upstream", retryable: true, summary: "a tool failed" },
  tool_not_found: { fault: "caller", retryable: false, summary: "no tool of that name is registered" },
  permission_denied: {
    fault: "caller",
    retryable: false,
    summary: "the caller may not do this (tool not allowed for the role, path outside the allowed roots)",
  },
  invalid_tool_input: {
    fault: "caller",
    retryable: false,
    summary: "a tool's arguments failed its input schema or name nothing it can use, or the tool refused the call",
  },
  invalid_tool_output: { fault: "upstream", retryable: false, summary: "a tool's result failed its output schema" },
  resource_exhausted: {
    fault: "caller",
    retryable: false,
    summary: "code run by a tool went over its memory or output limit",
  },
  tool_unavailable: {
    fault: "upstream",
    retryable: false,
    summary: "the tool has no backend configured (e.g. no web search provider)",
  },
  sandbox_unavailable: {
    fault: "upstream",
    retryable: false,
    summary: "the isolation a code runner needs is not available here, so the code was not run",
  },
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

const MAX_MESSAGE = 4000;
const MAX_COMPONENT = 100;

/** Options of an AgentmeshError beyond its code and message. */
export interface AgentmeshErrorOptions {
  /**
   * Overrides the code's retryability where it varies with the case: e.g. a `timeout` of code that
   * was killed (running it again times out again) or a `tool_error` on HTTP 429 versus 400.
   */
  readonly retryable?: boolean;
  /** Which component failed: an agent role, a tool, "nats", "redis". */
  readonly component?: string | null;
  readonly cause?: unknown;
}

/**
 * The one error class of agentmesh: a closed code (whose table entry says who is at fault and
 * whether a retry can help), the component that failed, and its wire form `WireError`.
 */
export class AgentmeshError extends Error {
  override readonly name = "AgentmeshError";
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly component: string | null;

  /** `message` is kept with any URL credentials in it hidden (`redactUrls`): errors travel and get printed. */
  constructor(code: ErrorCode, message: string, opts: AgentmeshErrorOptions = {}) {
    super(redactUrls(message), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.retryable = opts.retryable ?? ERROR_CODES[code].retryable;
    this.component = opts.component ?? null;
  }

  /** Who is at fault, from the code table. */
  get fault(): Fault {
    return ERROR_CODES[this.code].fault;
  }

  /** The wire form, cut to fit; `component` names who reported the error when it names none itself. */
  toWire(component: string | null = null): WireError {
    const c = this.component ?? component;
    return {
      code: this.code,
      message: this.message.slice(0, MAX_MESSAGE),
      retryable: this.retryable,
      component: c === null ? null : c.slice(0, MAX_COMPONENT),
    };
  }

  /** Rebuilds an error from its wire form; a value that is not a `WireError` becomes `internal`. */
  static fromWire(wire: unknown): AgentmeshError {
    const parsed = WireError.safeParse(wire);
    if (!parsed.success) return new AgentmeshError("internal", `malformed wire error: ${formatZodError(parsed.error)}`);
    const { code, message, retryable, component } = parsed.data;
    return new AgentmeshError(code, message, { retryable, component });
  }

  /**
   * Anything thrown, as an AgentmeshError: ours as it is, anything else `internal` (a bug, not
   * retried), its message after `context` when given (e.g. "bug in planner.plan").
   */
  static from(err: unknown, context?: string): AgentmeshError {
    if (err instanceof AgentmeshError) return err;
    const what =
      err instanceof Error
        ? err.message || err.name
        : typeof err === "string"
          ? err
          : `non-error thrown: ${safeString(err)}`;
    return new AgentmeshError(
      "internal",
      context === undefined ? what : `${context}: ${what}`,
      err === undefined ? {} : { cause: err },
    );
  }
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * Every problem of a failed parse on one line, in `z.prettifyError`'s words
 * ("Invalid input: expected string, received number → at a.b; …"), cut to `max` characters.
 */
export function formatZodError(err: z.ZodError, max = 1000): string {
  const line = z
    .prettifyError(err)
    .replace(/\n\s*→ at /g, " → at ")
    .replace(/\n✖ /g, "; ")
    .replace(/^✖ /, "")
    .replace(/\s*\n\s*/g, " ");
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
