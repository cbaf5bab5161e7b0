import {
  CODE_TOOL,
  HaloCitation,
  LIMITS,
  RESEARCH_DEPTHS,
  type CodeLanguage,
  type CodeRun,
  type ToolCallOutcome,
  type ToolCallRequest,
} from "@agentmesh/contracts";
import { clipText as clip, type ToolCallResult } from "@agentmesh/tools";
import { renderOutput } from "./execute.js";
import type { ExecutorCall } from "./tools.js";

type Ctx = {
  readonly sessionId: string;
  readonly taskId: string;
  readonly signal: AbortSignal;
  /** Tool calls the session may still make, from the task. */
  readonly allowance?: number;
};

const CONTENT_MAX = 4000;
const LANGUAGE_OF: Readonly<Record<string, CodeLanguage>> = Object.fromEntries(
  Object.entries(CODE_TOOL).map(([language, tool]) => [tool, language as CodeLanguage]),
);
/** What a code tool's output holds (the tools package's run_python and run_js). */
type CodeOutput = {
  ok: boolean;
  result: string | null;
  error: string | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  durationMs: number;
};
/** The start of `text` in at most `max` characters, its layout kept (what code printed first). */
const head = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
/** The end of `text` in at most `max` characters, its layout kept (a traceback ends with the exception). */
const tail = (text: string, max: number) => (text.length <= max ? text : `…${text.slice(text.length - max + 1)}`);
/** Marks the middle of a run's stdout left out. */
const OMITTED = "\n…\n";

/**
 * A run's stdout in at most `max` characters: whole when it fits; else its start and its last
 * line whole, the middle left out and marked (a program prints its result last: the data agent's
 * chart rows are its last line); only the start when the last line alone does not fit.
 */
function stdoutWithin(text: string, max: number): string {
  if (text.length <= max) return text;
  const body = text.trimEnd();
  const last = body.slice(body.lastIndexOf("\n") + 1);
  const room = max - OMITTED.length - last.length;
  return last.length > 0 && room > 0 ? `${body.slice(0, room)}${OMITTED}${last}` : head(text, max);
}

/** Failures that mean a limit stopped the code mid-run, not that it never ran. */
const LIMIT_CODES: ReadonlySet<string> = new Set(["timeout", "resource_exhausted"]);

/** Keeps the sources that make valid citations, at most as many as the deepest research keeps. */
function citations(
  candidates: Array<{ title: string; url: string | null; path: string | null; snippet: string }>,
): HaloCitation[] {
  return candidates
    .map((c) => ({
      title: clip(c.title || c.url || c.path || "", 300),
      url: c.url,
      path: c.path === null ? null : clip(c.path, 300),
      snippet: clip(c.snippet, 500),
    }))
    .filter((c) => HaloCitation.safeParse(c).success)
    .slice(0, RESEARCH_DEPTHS.deep.sourcesKept);
}

/** The sources a tool's output carries, as halo citations: pages (web_search), files (corpus_search, file_read), an MCP tool's own. */
export function citationsOf(tool: string, output: unknown): HaloCitation[] {
  const o = (output ?? {}) as Record<string, unknown>;
  if (tool.startsWith("mcp.")) return citations((o.citations ?? []) as HaloCitation[]);
  switch (tool) {
    case "web_search":
      return citations(
        ((o.results ?? []) as Array<{ title: string; url: string; snippet: string }>).map((h) => ({
          title: h.title,
          url: h.url,
          path: null,
          snippet: h.snippet,
        })),
      );
    case "corpus_search":
      return citations(
        ((o.results ?? []) as Array<{ path: string; passage: string }>).map((h) => ({
          title: h.path,
          url: null,
          path: h.path,
          snippet: h.passage,
        })),
      );
    case "file_read":
      return citations([
        { title: String(o.path ?? ""), url: null, path: String(o.path ?? ""), snippet: String(o.content ?? "") },
      ]);
    default:
      return [];
  }
}

/** A code tool's run as a CodeRun: exit 0 ran to its end, 1 raised; `truncated` when the result or the output was cut (stdout keeps its start and last line, stderr its end). */
export function codeRunOf(language: CodeLanguage, out: CodeOutput): CodeRun {
  return {
    language,
    exit_code: out.ok ? 0 : 1,
    stdout: stdoutWithin(out.stdout, LIMITS.maxCodeOutputChars),
    stderr: tail(out.stderr, LIMITS.maxCodeOutputChars),
    result: out.result === null ? null : head(out.result, 2000),
    error: out.error === null ? null : tail(out.error, 2000),
    truncated:
      out.truncated ||
      out.stdout.length > LIMITS.maxCodeOutputChars ||
      out.stderr.length > LIMITS.maxCodeOutputChars ||
      (out.result?.length ?? 0) > 2000,
    duration_ms: out.durationMs,
  };
}

/** A run as text for the agent's model: exit code, then what it printed, returned and raised. */
function renderRun(run: CodeRun): string {
  const parts = [
    `exit code: ${run.exit_code ?? "none (stopped by a limit)"}`,
    run.stdout ? `stdout:\n${run.stdout}` : "",
    run.stderr ? `stderr:\n${run.stderr}` : "",
    run.result !== null ? `result: ${run.result}${run.truncated ? " (truncated)" : ""}` : "",
    run.error !== null ? `error: ${run.error}` : "",
  ];
  return head(parts.filter(Boolean).join("\n"), CONTENT_MAX);
}

/**
 * executor.call: one tool call under the safe executor, allowed only among the caller's tools (a
 * tool outside `allowed` is refused `permission_denied` before any attempt). A tool's failure is
 * `ok: false`, never a task failure. For run_python and run_js, `code` reports the run:
 * - it ran to its end: ok, exit_code 0;
 * - the code raised: NOT ok (`tool_error`, not retryable: the same code raises again), exit_code 1,
 *   the exception in `error` and stderr kept, so the workflow has the coder fix it;
 * - a limit stopped it (timeout, resource_exhausted): not ok, exit_code null, the limit in `error`;
 * - any other failure (refused, bad arguments, no sandbox here, the sandbox broke): not ok, `code` null.
 */
export async function callTool(
  req: ToolCallRequest,
  call: (c: ExecutorCall) => Promise<ToolCallResult>,
  ctx: Ctx,
): Promise<ToolCallOutcome> {
  const started = performance.now();
  const result = await call({
    tool: req.tool,
    args: req.arguments,
    sessionId: ctx.sessionId,
    taskId: ctx.taskId,
    signal: ctx.signal,
    limits: req.limits,
    policy: { listed: req.allowed, banned: [] },
    ...(ctx.allowance === undefined ? {} : { allowance: ctx.allowance }),
  });
  const base = {
    tool: req.tool,
    latency_ms: Math.round((performance.now() - started) * 1000) / 1000,
    attempts: result.records.filter((r) => r.attempt > 0).length,
  };
  const language = Object.hasOwn(LANGUAGE_OF, req.tool) ? LANGUAGE_OF[req.tool] : undefined;
  if (!result.ok) {
    const error = {
      code: result.error.code,
      message: clip(result.error.message, 500),
      retryable: result.error.retryable,
    };
    const stopped = language !== undefined && base.attempts > 0 && LIMIT_CODES.has(result.error.code);
    const code: CodeRun | null = stopped
      ? {
          language,
          exit_code: null,
          stdout: "",
          stderr: "",
          result: null,
          error: head(result.error.message, 2000),
          truncated: false,
          duration_ms: base.latency_ms,
        }
      : null;
    return {
      ...base,
      ok: false,
      content: head(`${result.error.code}: ${result.error.message}`, CONTENT_MAX),
      error,
      citations: [],
      code,
    };
  }
  if (language !== undefined) {
    const run = codeRunOf(language, result.output as CodeOutput);
    const error =
      run.exit_code === 0
        ? null
        : {
            code: "tool_error" as const,
            message: `the code raised: ${tail(run.error ?? "an error", 480)}`,
            retryable: false,
          };
    return { ...base, ok: error === null, content: renderRun(run), error, citations: [], code: run };
  }
  return {
    ...base,
    ok: true,
    content: head(renderOutput(req.tool, result.output).text, CONTENT_MAX),
    error: null,
    citations: citationsOf(req.tool, result.output),
    code: null,
  };
}
