import { z } from "zod";
import { AgentmeshError, ErrorCode, formatZodError, type Tier, type Usage } from "@agentmesh/contracts";
import { delay } from "./delay.js";
import { forwardDelta } from "./stream.js";

/** The codes a model call fails with, so a script can fail only as a real model port can. */
const ModelErrorCode = ErrorCode.extract([
  "model_error",
  "model_rate_limited",
  "model_invalid_output",
  "model_refused",
  "needs_model",
  "timeout",
  "cancelled",
  "internal",
]);
type ModelErrorCode = z.infer<typeof ModelErrorCode>;
import { createScriptCursor, describeEntries, streamPieces } from "./script-cursor.js";
import { parseReply } from "./structured.js";
import type { ModelMode, ModelPort, ModelReply, ModelRequest, SchemaRequest, TextRequest } from "./types.js";

/**
 * One scripted answer (or failure) for a role and op. Exactly one of `output`, `content`, `error`.
 * A text-mode request gets `content`, or `output` as JSON text, as the scripted HTTP server sends it.
 */
export interface ScriptEntry {
  readonly role: string;
  readonly op: string;
  /** The structured output; still validated against the request's schema. */
  readonly output?: unknown;
  /** The raw reply text: a text-mode answer, or (e.g. invalid) JSON that a schema request parses. */
  readonly content?: string;
  readonly error?: { readonly code: ModelErrorCode; readonly message: string; readonly retryable?: boolean };
  /** Wait this long before answering (an abort cuts it short with `cancelled`). */
  readonly delayMs?: number;
  /** Wait this long between streamed deltas (an abort cuts it short with `cancelled`). */
  readonly chunkDelayMs?: number;
  /** Reported usage; unset fields are 0, and `model_calls` is 1. */
  readonly usage?: Partial<Usage>;
}

/** A call the scripted model received. `entry` is the script index it got, null if unexpected. */
export interface ScriptedCall {
  readonly role: string;
  readonly op: string;
  readonly taskId: string;
  readonly mode: ModelMode;
  /** The request's temperature override; null when it named none (the role's configured one applies). */
  readonly temperature: number | null;
  /** The tier the request asked for; null when it named none. */
  readonly tier: Tier | null;
  readonly entry: number | null;
}

/** A model that answers from a script; see `createScriptedModel`. */
export interface ScriptedModel extends ModelPort {
  /** Every call, in arrival order. */
  readonly calls: readonly ScriptedCall[];
  /** Throws, listing them, if any entry was never used or any call was unexpected. */
  assertConsumed(): void;
}

/** Options of the scripted model. */
export interface ScriptedModelOptions {
  /** Reported as the reply's model (default "scripted"). */
  readonly model?: string;
  /** Reported as the reply's tier (default "fast"). */
  readonly tier?: Tier;
}

const Entry = z
  .object({
    role: z.string().min(1),
    op: z.string().min(1),
    output: z.unknown().optional(),
    content: z.string().optional(),
    error: z.object({ code: ModelErrorCode, message: z.string(), retryable: z.boolean().optional() }).optional(),
    delayMs: z.number().int().nonnegative().optional(),
    chunkDelayMs: z.number().int().nonnegative().optional(),
    usage: z
      .object({
        prompt_tokens: z.number().int().nonnegative(),
        completion_tokens: z.number().int().nonnegative(),
        cost_usd: z.number().nonnegative(),
        model_calls: z.number().int().nonnegative(),
      })
      .partial()
      .optional(),
  })
  .refine(
    (e) => [e.output, e.content, e.error].filter((x) => x !== undefined).length === 1,
    "an entry has exactly one of `output`, `content` and `error`",
  );

/** Checks a script up front, so a typo fails the test that wrote it, not a later call. */
export function validateScript<E>(script: readonly E[], schema: z.ZodType, what: string): void {
  const problems = script.flatMap((entry, i) => {
    const r = schema.safeParse(entry);
    return r.success ? [] : [`#${i}: ${formatZodError(r.error)}`];
  });
  if (problems.length > 0) throw new Error(`${what}: invalid script entries:\n${problems.join("\n")}`);
}

/**
 * A model for tests that answers from `script`. Per role+op, the n-th distinct task id gets the
 * n-th entry and a repeated task id gets the same entry again (a redelivered task replays
 * identically). A call with no entry left throws `AgentmeshError("internal")` and is recorded.
 * Modes behave as the HTTP adapter's do, except that one entry is one reply: a structured request
 * whose entry fails its schema fails `model_invalid_output` (retryable) without a validation retry.
 */
export function createScriptedModel(script: readonly ScriptEntry[], opts: ScriptedModelOptions = {}): ScriptedModel {
  validateScript(script, Entry, "createScriptedModel");
  const frozen = script.map((e) => structuredClone(e));
  const cursor = createScriptCursor(frozen);
  const calls: ScriptedCall[] = [];

  /** Hands the reply to `onToken` delta by delta, as a streaming endpoint would. */
  async function stream(req: ModelRequest, entry: ScriptEntry, content: string): Promise<void> {
    for (const [i, piece] of streamPieces(content).entries()) {
      if (i > 0 && entry.chunkDelayMs) await delay(entry.chunkDelayMs, req.signal);
      if (req.signal?.aborted)
        throw new AgentmeshError("cancelled", "the model call was cancelled", { retryable: false });
      if (req.onToken) forwardDelta(req.onToken, piece);
    }
  }

  /** A schema request's output: the entry's `output` (a copy) or its `content` parsed as JSON, validated. */
  function validated(req: SchemaRequest<unknown>, entry: ScriptEntry, index: number): unknown {
    // One reply, no validation retry: json_object says so to the caller, structured leaves it to the task's retry.
    const retryable = req.mode !== "json_object";
    const where = `scripted model: entry #${index} (${req.role}.${req.op})`;
    if (entry.content !== undefined) {
      const parsed = parseReply(req.schema, entry.content);
      if (!parsed.ok)
        throw new AgentmeshError("model_invalid_output", `${where}: ${parsed.problem}`, { retryable: retryable });
      return parsed.value;
    }
    // A copy, so a caller that mutates its output cannot change what a replay returns.
    const result = req.schema.safeParse(structuredClone(entry.output));
    if (!result.success)
      throw new AgentmeshError("model_invalid_output", `${where} fails the schema: ${formatZodError(result.error)}`, {
        retryable: retryable,
      });
    return result.data;
  }

  function complete<T>(req: SchemaRequest<T>): Promise<ModelReply<T>>;
  function complete(req: TextRequest): Promise<ModelReply<string>>;
  async function complete(req: ModelRequest): Promise<ModelReply<unknown>> {
    const taken = cursor.take(req.role, req.op, req.taskId);
    calls.push({
      role: req.role,
      op: req.op,
      taskId: req.taskId,
      mode: req.mode ?? "structured",
      temperature: req.temperature ?? null,
      tier: req.tier ?? null,
      entry: taken?.index ?? null,
    });
    if (!taken)
      throw new AgentmeshError(
        "internal",
        `scripted model: unexpected call ${req.role}.${req.op} for task ${req.taskId} (no script entry left)`,
        { retryable: false },
      );
    const { entry, index } = taken;
    if (entry.delayMs) await delay(entry.delayMs, req.signal);
    if (req.signal?.aborted)
      throw new AgentmeshError("cancelled", "the model call was cancelled", { retryable: false });
    if (entry.error)
      throw new AgentmeshError(entry.error.code, entry.error.message, { retryable: entry.error.retryable });
    const content = entry.content ?? JSON.stringify(entry.output);
    if (req.mode === "text" || req.onToken) await stream(req, entry, content);
    const output = req.mode === "text" ? content : validated(req, entry, index);
    const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 1, ...entry.usage };
    return { output, usage, model: opts.model ?? "scripted", tier: opts.tier ?? "fast", latencyMs: entry.delayMs ?? 0 };
  }

  return {
    name: "scripted",
    calls,
    assertConsumed() {
      const left = cursor.unconsumed();
      const unexpected = calls.filter((c) => c.entry === null);
      if (left.length === 0 && unexpected.length === 0) return;
      const parts: string[] = [];
      if (left.length > 0) parts.push(`unconsumed entries:\n${describeEntries(left)}`);
      if (unexpected.length > 0)
        parts.push(`unexpected calls:\n${unexpected.map((c) => `  ${c.role}.${c.op} task ${c.taskId}`).join("\n")}`);
      throw new Error(`scripted model: ${parts.join("\n")}`);
    },
    complete,
  };
}
