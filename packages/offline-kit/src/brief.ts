import {
  AgentmeshError,
  handoffTarget,
  type AgentBrief,
  type CodeAttempt,
  type OfferedTool,
  type ToolObservation,
} from "@agentmesh/contracts";
import { clip } from "./words.js";

/** Characters of an earlier run's code, output and error shown to the model that fixes it. */
const SHOWN = { code: 12_000, output: 3000, error: 2000 } as const;

/** A supervisor agent's brief as the opening of its user prompt: the task, the query when the task differs, the handoff context, the shared notes (the prompt still says "Shared memory", as the agents' prompt files do). */
export function renderBrief(brief: AgentBrief): string {
  return [
    `Task: ${brief.task}`,
    brief.task.trim() === brief.query.trim() ? "" : `The user's query: ${brief.query}`,
    brief.handoff_context ? `Context from the agent that handed this task over: ${brief.handoff_context}` : "",
    brief.memory ? `Shared memory (what earlier agents found):\n${brief.memory}` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** The tools an agent is offered, one line each; "(none)" when there are none. */
export function renderTools(tools: readonly OfferedTool[]): string {
  return tools.length ? tools.map((t) => `- ${t.name}: ${t.description}`).join("\n") : "(none)";
}

/** An agent's earlier tool calls this turn (a refused handoff included), one line each, under a heading; empty when there were none. */
export function renderObservations(observations: readonly ToolObservation[]): string {
  if (observations.length === 0) return "";
  const line = (o: ToolObservation) =>
    `- ${o.tool} ${JSON.stringify(o.arguments)} ${o.ok ? "returned" : "failed"}: ${clip(o.content, 1000)}`;
  return `Your earlier tool calls:\n${observations.map(line).join("\n")}`;
}

/**
 * Earlier code runs for the model to fix: each earlier one by its outcome, the last in full (its
 * code, stdout, stderr and error). Empty when there were none.
 */
export function renderAttempts(attempts: readonly CodeAttempt[]): string {
  const last = attempts.at(-1);
  if (!last) return "";
  const outcome = (a: CodeAttempt) =>
    a.error
      ? `failed: ${clip(a.error, 300)}`
      : a.exit_code === 0
        ? "ran to its end"
        : `exit code ${a.exit_code ?? "none (a limit stopped it)"}`;
  const earlier = attempts.slice(0, -1).map((a, i) => `Run ${i + 1} (${a.language}) ${outcome(a)}.`);
  return [
    ...earlier,
    `Run ${attempts.length}, the last (${last.language}), ${outcome(last)}. Its code:\n\`\`\`${last.language}\n${clip(last.code, SHOWN.code)}\n\`\`\``,
    last.error ? `Its error:\n${clip(last.error, SHOWN.error)}` : "",
    last.stderr ? `Its stderr:\n${clip(last.stderr, SHOWN.output)}` : "",
    last.stdout ? `Its stdout:\n${clip(last.stdout, SHOWN.output)}` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
}

/**
 * True for any supervisor agent's `handoff_to_<target>` tool, offered or not. A role passes such a call
 * on rather than failing it: the workflow decides every handoff (the matrix, A→B→A, the cap) and
 * answers a refused one as the tool's result, so the agent goes on (docs/workflows/supervisor.md).
 */
export const isHandoffTool = (tool: string): boolean => handoffTarget(tool) !== null;

/** True when an agent may call `tool` this turn: one it was offered, or any handoff (the workflow decides those). */
export const mayCall = (tool: string, offered: readonly OfferedTool[]): boolean =>
  isHandoffTool(tool) || offered.some((t) => t.name === tool);

/**
 * A flat draft's tool call as the agent's action: its arguments parsed from their JSON text. A
 * tool the agent may not call (see `mayCall`) is the model's fault, `model_invalid_output`.
 */
export function draftToolCall(
  draft: { tool: string; arguments_json: string },
  offered: readonly OfferedTool[],
  agent: string,
): { action: "tool"; tool: string; arguments: Record<string, unknown> } {
  if (!mayCall(draft.tool, offered)) {
    throw new AgentmeshError(
      "model_invalid_output",
      `the model called "${clip(draft.tool, 80)}", which is not a tool the ${agent} agent was offered`,
    );
  }
  return { action: "tool", tool: draft.tool, arguments: parseToolArguments(draft.arguments_json) ?? {} };
}

/** A model's tool arguments written as JSON text, as the object they must be; null when they are not a JSON object. */
export function parseToolArguments(json: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
