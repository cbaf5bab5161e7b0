import { AgentmeshError, formatZodError, type ErrorCode, type RoleName } from "@agentmesh/contracts";
import { backoffDelay, sleep as defaultSleep } from "./backoff.js";
import { argsDigest } from "./digest.js";
import { scanDangerous } from "./patterns.js";
import type { ToolCallRecord } from "./record.js";
import type { RegisteredTool, ToolRegistry } from "./registry.js";

/** One tool call as an agent asks for it. */
export interface ToolCallRequest {
  readonly tool: string;
  readonly args: unknown;
  readonly role: RoleName;
  readonly sessionId: string;
  readonly taskId: string;
  /** The caller giving up (task deadline, cancel): stops the current attempt and any retry. */
  readonly signal?: AbortSignal;
  /** The session's tool policy, on top of the role's allow-list; absent = the allow-list alone. */
  readonly policy?: CallPolicy;
  /**
   * Tool calls the session may still make, counted by its coordinator (so across every replica
   * and restart): 0 refuses the call as `budget_exceeded`. When given, the executor's own
   * per-process counter is not used.
   */
  readonly allowance?: number;
}

/** Which tools a session lets this call name (both refusals are `permission_denied`, before any attempt). */
export interface CallPolicy {
  /** Only these tools (the ones the session's planner was shown); absent = any the role may call. */
  readonly listed?: readonly string[];
  /** Never these (the session's banned tools). */
  readonly banned?: readonly string[];
}

/** The result of a call, success or typed failure, with one record per attempt (or refusal). */
export type ToolCallResult =
  | { readonly ok: true; readonly tool: string; readonly output: unknown; readonly records: readonly ToolCallRecord[] }
  | {
      readonly ok: false;
      readonly tool: string;
      readonly error: AgentmeshError;
      readonly records: readonly ToolCallRecord[];
    };

/** Counts tool calls per session; the local default (kept in the process) can be swapped for a shared store. */
export interface SessionCallCounter {
  /** Adds one call to the session and returns the new total. */
  increment(sessionId: string): number | Promise<number>;
}

/** Options of a safe executor. */
export interface SafeExecutorOptions {
  readonly registry: ToolRegistry;
  /** Tool calls one session may make (each call counts once, whatever its attempts). Default 50. */
  readonly maxCallsPerSession?: number;
  readonly counter?: SessionCallCounter;
  /** Called with every record as it is made (telemetry, logs). */
  readonly onRecord?: (record: ToolCallRecord) => void;
  /** Test seams: clock for `startedAt`, the backoff sleep, and jitter's random source. */
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random?: () => number;
}

/** Runs registered tools under validation, role checks, timeouts, retries and a per-session cap. */
export interface SafeExecutor {
  /** Never throws for a tool's failure: the result says what happened. */
  call(req: ToolCallRequest): Promise<ToolCallResult>;
}

// Validation and permission failures are never retried, even if a tool marks them retryable.
const NEVER_RETRY: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "invalid_tool_input",
  "invalid_tool_output",
  "invalid_message",
  "permission_denied",
  "tool_not_found",
  "budget_exceeded",
  "sandbox_unavailable",
  "cancelled",
  "deadline_exceeded",
]);

/** A bounded counter kept in the process (oldest sessions forgotten first). */
export function createLocalSessionCounter(maxSessions = 10_000): SessionCallCounter {
  const counts = new Map<string, number>();
  return {
    increment(sessionId) {
      const n = (counts.get(sessionId) ?? 0) + 1;
      counts.delete(sessionId);
      counts.set(sessionId, n);
      if (counts.size > maxSessions) counts.delete(counts.keys().next().value as string);
      return n;
    },
  };
}

type Attempt = { ok: true; output: unknown } | { ok: false; failure: AgentmeshError };

/** What a tool threw: its typed error as it is; anything else is the tool failing (`tool_error`, worth a retry). */
function toolFailure(err: unknown): AgentmeshError {
  if (err instanceof AgentmeshError) return err;
  return new AgentmeshError("tool_error", err instanceof Error ? err.message || err.name : String(err), { cause: err });
}

function abortFailure(reason: unknown): AgentmeshError {
  return reason instanceof AgentmeshError
    ? reason
    : new AgentmeshError("cancelled", "the caller cancelled the tool call");
}

class SafeExecutorImpl implements SafeExecutor {
  readonly #opts: SafeExecutorOptions;
  readonly #counter: SessionCallCounter;
  readonly #max: number;

  constructor(opts: SafeExecutorOptions) {
    this.#opts = opts;
    this.#counter = opts.counter ?? createLocalSessionCounter();
    this.#max = opts.maxCallsPerSession ?? 50;
  }

  async call(req: ToolCallRequest): Promise<ToolCallResult> {
    const records: ToolCallRecord[] = [];
    const now = this.#opts.now ?? Date.now;
    let digest: string | null = null;
    try {
      digest = argsDigest(req.args);
    } catch {
      // a cyclic or non-JSON argument cannot be digested; it is refused below by the schema
    }
    const flags = scanDangerous(req.args);
    const record = (
      r: Pick<ToolCallRecord, "attempt" | "latencyMs" | "backoffMs"> & { startedAt: number; result: Attempt },
    ): void => {
      const rec: ToolCallRecord = {
        tool: req.tool.slice(0, 80),
        sessionId: req.sessionId,
        taskId: req.taskId,
        role: req.role,
        argsDigest: digest,
        attempt: r.attempt,
        startedAt: new Date(r.startedAt).toISOString(),
        latencyMs: Math.round(r.latencyMs * 1000) / 1000,
        outcome: r.result.ok ? "ok" : r.result.failure.code,
        retryable: r.result.ok ? null : r.result.failure.retryable,
        message: r.result.ok ? null : r.result.failure.message.slice(0, 500),
        backoffMs: r.backoffMs,
        flags,
      };
      records.push(rec);
      this.#opts.onRecord?.(rec);
    };
    const refuse = (f: AgentmeshError): ToolCallResult => {
      record({ attempt: 0, latencyMs: 0, backoffMs: null, startedAt: now(), result: { ok: false, failure: f } });
      return { ok: false, tool: req.tool, error: f, records };
    };

    const admitted = await this.#admit(req);
    if (!admitted.ok) return refuse(admitted.failure);
    const { tool, input } = admitted;

    const random = this.#opts.random ?? Math.random;
    const doSleep = this.#opts.sleep ?? defaultSleep;
    for (let attempt = 1; ; attempt++) {
      const startedAt = now();
      const t0 = performance.now();
      const result = await this.#attempt(tool, input, req, attempt);
      const latencyMs = performance.now() - t0;
      const f = result.ok ? null : result.failure;
      const retry =
        f !== null &&
        f.retryable &&
        !NEVER_RETRY.has(f.code) &&
        !tool.retry.nonRetryable.includes(f.code) &&
        attempt < tool.retry.maxAttempts &&
        !req.signal?.aborted;
      const backoffMs = retry ? backoffDelay(tool.retry, attempt + 1, random) : null;
      record({ attempt, latencyMs, backoffMs, startedAt, result });
      if (result.ok) return { ok: true, tool: tool.name, output: result.output, records };
      if (backoffMs === null) return { ok: false, tool: tool.name, error: result.failure, records };
      try {
        await doSleep(backoffMs, req.signal);
      } catch (reason) {
        return { ok: false, tool: tool.name, error: abortFailure(reason ?? req.signal?.reason), records };
      }
    }
  }

  /**
   * The tool and its checked input, or why the call is refused: no such tool, a role or session
   * policy that forbids it, input its schema rejects, or a session out of tool calls.
   */
  async #admit(
    req: ToolCallRequest,
  ): Promise<{ ok: true; tool: RegisteredTool; input: unknown } | { ok: false; failure: AgentmeshError }> {
    const refused = (failure: AgentmeshError) => ({ ok: false, failure }) as const;
    const tool = this.#opts.registry.get(req.tool);
    if (!tool) return refused(new AgentmeshError("tool_not_found", `no tool named "${req.tool.slice(0, 80)}"`));
    if (!tool.allowedRoles.includes(req.role))
      return refused(new AgentmeshError("permission_denied", `role "${req.role}" may not call "${tool.name}"`));
    if (req.policy?.banned?.includes(tool.name))
      return refused(new AgentmeshError("permission_denied", `"${tool.name}" is banned for this session`));
    if (req.policy?.listed && !req.policy.listed.includes(tool.name)) {
      return refused(
        new AgentmeshError("permission_denied", `"${tool.name}" is not among the tools this session was offered`),
      );
    }
    const parsed = tool.input.safeParse(req.args);
    if (!parsed.success)
      return refused(new AgentmeshError("invalid_tool_input", `${tool.name}: ${formatZodError(parsed.error)}`));
    if (req.allowance !== undefined) {
      if (req.allowance < 1)
        return refused(new AgentmeshError("budget_exceeded", "the session used all the tool calls it may make"));
    } else {
      const used = await this.#counter.increment(req.sessionId);
      if (used > this.#max)
        return refused(new AgentmeshError("budget_exceeded", `session used its ${this.#max} tool calls`));
    }
    return { ok: true, tool, input: parsed.data };
  }

  // One attempt: resolves at the tool's answer, its timeout or the caller's abort, whichever is
  // first. On timeout the tool's signal is aborted so it kills its worker; its late answer is dropped.
  async #attempt(tool: RegisteredTool, input: unknown, req: ToolCallRequest, attempt: number): Promise<Attempt> {
    const ac = new AbortController();
    const deadline = Date.now() + tool.timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<Attempt>((resolve) => {
      timer = setTimeout(() => {
        const err = new AgentmeshError("timeout", `${tool.name} did not finish within ${tool.timeoutMs} ms`);
        ac.abort(err);
        resolve({ ok: false, failure: err });
      }, tool.timeoutMs);
      onAbort = () => {
        ac.abort(req.signal?.reason);
        resolve({ ok: false, failure: abortFailure(req.signal?.reason) });
      };
      if (req.signal?.aborted) onAbort();
      else req.signal?.addEventListener("abort", onAbort, { once: true });
    });
    const ctx = {
      signal: ac.signal,
      sessionId: req.sessionId,
      taskId: req.taskId,
      attempt,
      deadline,
      idempotencyKey: tool.sideEffects ? req.taskId : undefined,
    };
    const run = (async (): Promise<Attempt> => {
      try {
        const out: unknown = await tool.execute(input, ctx);
        const checked = tool.output.safeParse(out);
        if (checked.success) return { ok: true, output: checked.data };
        return {
          ok: false,
          failure: new AgentmeshError("invalid_tool_output", `${tool.name}: ${formatZodError(checked.error)}`),
        };
      } catch (err) {
        return { ok: false, failure: toolFailure(err) };
      }
    })();
    try {
      return await Promise.race([run, stopped]);
    } finally {
      clearTimeout(timer);
      if (onAbort) req.signal?.removeEventListener("abort", onAbort);
    }
  }
}

/** Creates the executor that every tool call of an agent goes through. */
export function createSafeExecutor(opts: SafeExecutorOptions): SafeExecutor {
  return new SafeExecutorImpl(opts);
}
