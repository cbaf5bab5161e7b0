import { ERROR_CODES, ErrorCode, type WireError } from "@agentmesh/contracts";
import { AgentmeshError } from "@agentmesh/messaging";
import { isModelError } from "@agentmesh/llm";

/**
 * The error a handler op throws to fail with a typed code. `retryable` defaults to the code's
 * entry in the contracts' table; a retryable failure is redelivered, the rest are reported.
 */
export function opError(code: ErrorCode, message: string, opts: { retryable?: boolean; cause?: unknown } = {}): Error {
  return new AgentmeshError(code, message, { retryable: opts.retryable, cause: opts.cause });
}

/** An error that carries a closed code and says whether a retry helps (a tool's error, by shape). */
function typedShape(err: unknown): { code: ErrorCode; message: string; retryable: boolean } | null {
  if (!(err instanceof Error)) return null;
  const e = err as Error & { code?: unknown; retryable?: unknown };
  if (typeof e.code !== "string" || !ErrorCode.safeParse(e.code).success) return null;
  const code = e.code as ErrorCode;
  return { code, message: e.message, retryable: typeof e.retryable === "boolean" ? e.retryable : ERROR_CODES[code].retryable };
}

/**
 * What a thrown error means for the task: a typed error (ours, the model port's, a tool's) keeps
 * its code and retryability; anything else is a bug (`internal`), not retried.
 */
export function toOpFailure(err: unknown, role: string, op: string): { error: WireError; typed: boolean } {
  if (err instanceof AgentmeshError) return { error: { code: err.code, message: err.message.slice(0, 4000), retryable: err.retryable, component: err.component ?? role }, typed: true };
  if (isModelError(err)) return { error: { code: err.code, message: err.message.slice(0, 4000), retryable: err.retryable, component: role }, typed: true };
  const shaped = typedShape(err);
  if (shaped) return { error: { ...shaped, message: shaped.message.slice(0, 4000), component: role }, typed: true };
  const message = err instanceof Error ? err.message || err.name : String(err);
  return { error: { code: "internal", message: `bug in ${role}.${op}: ${message}`.slice(0, 4000), retryable: false, component: role }, typed: false };
}
