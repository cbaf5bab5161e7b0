import { LIMITS, type RoleName } from "@agentmesh/contracts";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../registry.js";
import type { CodeRunner } from "../runners/types.js";

/**
 * The longest program a code tool takes: 100,000 characters of code after the supervisor data
 * agent's DATA_TEXT literal, an attachment's text as a JSON string (which escaping at most
 * doubles; an attachment holds no other control characters), so a data run over the largest
 * attachment the contract takes is not refused. The task's message limit still bounds its bytes.
 */
const MAX_CODE_CHARS = LIMITS.maxCodeChars + 2 * LIMITS.maxAttachmentChars + 64;

const Input = z.object({ code: z.string().min(1).max(MAX_CODE_CHARS) });
const Output = z.object({
  ok: z.boolean(),
  result: z.string().nullable(),
  error: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  durationMs: z.number().nonnegative(),
});

/** Options of a code tool. */
export interface CodeToolOptions {
  readonly runner: CodeRunner;
  readonly allowedRoles: readonly RoleName[];
  /** Per-attempt limit, start-up included: must exceed the runner's own time limit. */
  readonly timeoutMs?: number;
}

function codeTool(
  name: "run_js" | "run_python",
  description: string,
  defaultTimeoutMs: number,
  opts: CodeToolOptions,
): ToolDefinition<typeof Input, typeof Output> {
  return defineTool({
    name,
    description,
    input: Input,
    output: Output,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? defaultTimeoutMs,
    // code that ran out of time will run out of time again
    retry: { nonRetryable: ["timeout"] },
    async execute(input, ctx) {
      return opts.runner.run(input.code, { signal: ctx.signal });
    },
  });
}

/** `run_js`: JavaScript in QuickJS (WASM), no host objects; the last expression's value is returned as JSON. */
export function createRunJsTool(opts: CodeToolOptions): ToolDefinition<typeof Input, typeof Output> {
  return codeTool(
    "run_js",
    "Run JavaScript (ES2023, no modules, no I/O, no timers) in a sandbox. console.log is captured; the value of the last expression is returned as JSON.",
    5000,
    opts,
  );
}

/** `run_python`: Python 3 (Pyodide, standard library only) in a confined process; the last expression's repr() is returned. */
export function createRunPythonTool(opts: CodeToolOptions): ToolDefinition<typeof Input, typeof Output> {
  return codeTool(
    "run_python",
    "Run Python 3 (standard library only, no network, no files outside a scratch area) in a sandbox. print() is captured; the repr() of the last expression is returned.",
    30_000,
    opts,
  );
}
