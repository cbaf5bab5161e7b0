import type { SessionEvent, SessionState, TransitionLogLine } from "@agentmesh/contracts";

/** Output sink, so commands can be tested without a terminal. */
export interface Out {
  line(s: string): void;
  err(s: string): void;
}

export const consoleOut: Out = {
  line: (s) => process.stdout.write(`${s}\n`),
  err: (s) => process.stderr.write(`${s}\n`),
};

/** First line of a detail, cut to fit one terminal line. */
const brief = (s: string, max = 90) => {
  const first = s.split("\n").find((l) => l.trim()) ?? "";
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
};

const STAGE_NAMES: Record<string, string> = {
  planner: "planning",
  critic_planner: "reviewing the plan",
  researcher: "researching",
  critic_researcher: "reviewing research",
  expert: "answering",
  critic_expert: "reviewing the answer",
  finalizer: "finalizing",
};

/** One progress line per event worth showing; null for events a person need not see. */
export function renderEvent(e: SessionEvent, verbose: boolean): string | null {
  switch (e.type) {
    case "stage":
      if (e.status === "started") return `  … ${STAGE_NAMES[e.stage] ?? e.stage}${verbose && e.detail ? ` (${brief(e.detail)})` : ""}`;
      return `  ✓ ${e.stage}${e.detail ? `: ${brief(e.detail)}` : ""}`;
    case "step": {
      if (!verbose) return null;
      const p = e.provenance;
      return `    ${p.role}.${p.op} attempt ${p.attempt} via ${p.model} (${p.tier}), ${p.usage.prompt_tokens}+${p.usage.completion_tokens} tokens, ${Math.round(p.latency_ms)} ms`;
    }
    case "token":
      return null;
    case "tool_call":
      return verbose ? `    tool ${e.tool} called` : null;
    case "tool_result":
      return verbose ? `    tool ${e.tool} ${e.ok ? "ok" : "failed"} in ${Math.round(e.latency_ms)} ms` : null;
    case "error":
      return `  ✗ ${e.component ? `${e.component}: ` : ""}${e.message} [${e.code}]`;
    case "complete":
      return null;
  }
}

/** The closing block of `agentmesh ask`. */
export function renderFinal(e: Extract<SessionEvent, { type: "complete" }>): string {
  return [``, `Answer (${e.status}):`, indent(e.final_answer), ``, `Reasoning trace:`, indent(e.final_reasoning_trace)].join("\n");
}

const indent = (s: string) => s.split("\n").map((l) => `  ${l}`).join("\n");

/** `agentmesh inspect`: state summary, data and the transition log. */
export function renderInspect(state: SessionState, log: readonly TransitionLogLine[]): string {
  const m = state.meta;
  const lines = [
    `session   ${m.session_id}`,
    `workflow  ${m.workflow} v${m.workflow_version}`,
    `status    ${m.status}  (version ${m.version})`,
    `created   ${new Date(m.created_at).toISOString()}   updated ${new Date(m.updated_at).toISOString()}`,
    `usage     ${m.usage.steps} steps, ${m.usage.model_calls} model calls, ${m.usage.prompt_tokens}+${m.usage.completion_tokens} tokens, $${m.usage.cost_usd.toFixed(4)}`,
    `awaiting  ${m.awaiting.length ? m.awaiting.map((a) => `${a.role}.${a.op} ${a.task_id}`).join(", ") : "nothing"}`,
    ...(m.error ? [`error     ${m.error.code}: ${m.error.message}`] : []),
    ``,
    `data:`,
    indent(JSON.stringify(state.data, null, 2)),
    ``,
    `transition log (${log.length}):`,
    ...log.map((l) => `  v${l.version}  ${new Date(l.now).toISOString()}  ${l.input_id}  → ${l.status}${l.commands.length ? `  [${l.commands.join("; ")}]` : ""}`),
  ];
  return lines.join("\n");
}
