import {
  LIMITS,
  VegaLiteSpec,
  formatZodError,
  type CodeAttempt,
  type PendingCode,
  type ToolCallOutcome,
} from "@agentmesh/contracts";
import { clip } from "./critic-chain-messages.js";

/** The supervisor's code runs (the code and data agents' `execute` node): what a run came to and how it is told. */

/** The attempt a code run came to (a run the sandbox never made is one whose error is the executor's). */
export function attemptOf(code: PendingCode, outcome: ToolCallOutcome): CodeAttempt {
  const run = outcome.code;
  const max = LIMITS.maxCodeOutputChars;
  if (run === null)
    return {
      language: code.language,
      code: code.code,
      exit_code: null,
      stdout: "",
      stderr: "",
      error: clip(outcome.error ? `${outcome.error.code}: ${outcome.error.message}` : outcome.content, 2000),
    };
  return {
    language: code.language,
    code: code.code,
    exit_code: run.exit_code,
    stdout: clip(run.stdout, max),
    stderr: clip(run.stderr, max),
    error: run.error,
    result: run.result,
  };
}

/** The code agent's answer when its code ran: what it does, the code, what it printed and the value of its last expression. */
export function codeAnswer(explanation: string, a: CodeAttempt): string {
  const printed = a.stdout.trim() ? `Output:\n\`\`\`\n${a.stdout.trimEnd()}\n\`\`\`` : "";
  const value =
    a.result != null && a.result !== "" && a.result !== "undefined" && a.result !== "None"
      ? `Value of the last expression: \`${a.result}\``
      : "";
  const output = printed || value ? [printed, value] : ["Output: (the code printed nothing)"];
  return [explanation.trim(), `\`\`\`${a.language}\n${a.code.trimEnd()}\n\`\`\``, ...output]
    .filter(Boolean)
    .join("\n\n");
}

/**
 * The data agent's chart: its spec with the rows of the run's last non-empty stdout line (a JSON
 * array of records) inline; null (and why) when there is no such line or the spec is not valid.
 */
export function chartOf(chart: Record<string, unknown>, stdout: string): { spec: VegaLiteSpec } | { why: string } {
  const line = stdout
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
  if (line === undefined) return { why: "the code printed no chart rows" };
  let rows: unknown;
  try {
    rows = JSON.parse(line);
  } catch {
    return { why: "the last printed line is not JSON" };
  }
  if (
    !Array.isArray(rows) ||
    rows.length === 0 ||
    !rows.every((r) => typeof r === "object" && r !== null && !Array.isArray(r))
  ) {
    return { why: "the last printed line is not a JSON array of records" };
  }
  const spec = VegaLiteSpec.safeParse({ ...chart, data: { values: rows } });
  return spec.success
    ? { spec: spec.data }
    : { why: `the chart is not a valid spec (${formatZodError(spec.error, 200)})` };
}

/** A code run as the shared notes and a composed answer show it. */
export function runText(a: CodeAttempt): string {
  const parts = [
    a.stdout.trim() ? `stdout:\n${a.stdout.trimEnd()}` : "",
    a.stderr.trim() ? `stderr:\n${a.stderr.trimEnd()}` : "",
    a.error ? `error: ${a.error}` : "",
  ];
  const text = parts.filter(Boolean).join("\n");
  return text || `exit code ${a.exit_code ?? "none (stopped by a limit)"}, no output`;
}
