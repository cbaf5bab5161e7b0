import type { SessionEvent, SessionState, TransitionLogLine } from "@agentmesh/contracts";

/** Output sink, so commands can be tested without a terminal. */
export interface Out {
  line(s: string): void;
  /** Text without a newline of its own (live model text, a delta at a time). */
  write(s: string): void;
  err(s: string): void;
}

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
  awaiting_user: "waiting for your answer",
};

/** A tool call's arguments on one line. */
const argsLine = (args: Record<string, unknown>, truncated: boolean) =>
  `${brief(JSON.stringify(args), 70)}${truncated ? " (cut)" : ""}`;

function stageLine(e: Extract<SessionEvent, { type: "stage" }>, verbose: boolean): string {
  const about = e.description ? `: ${brief(e.description)}` : "";
  switch (e.status) {
    case "running":
      // the question a paused session asks is what the person must answer, so it is always shown
      if (e.name === "awaiting_user" && e.description)
        return `  ? ${brief(e.description, 200)} (answer: agentmesh answer ${e.session_id} "…")`;
      return `  … ${STAGE_NAMES[e.name] ?? e.name}${verbose && e.description ? ` (${brief(e.description)})` : ""}`;
    case "completed":
      return `  ✓ ${e.name}${about}`;
    case "failed":
      return `  ✗ ${e.name}${about || " failed"}`;
  }
}

/** Why a handoff was refused, in a few words. */
const REFUSED: Readonly<Record<Extract<SessionEvent, { type: "handoff_refused" }>["reason"], string>> = {
  matrix: "not allowed by the handoff matrix",
  ping_pong: "straight back to the agent that handed it over",
  cap: "the session's handoffs are used up",
};

/** One progress line per event worth showing; null for events a person need not see. */
export function renderEvent(e: SessionEvent, verbose: boolean): string | null {
  switch (e.type) {
    case "stage":
      return stageLine(e, verbose);
    case "step": {
      if (!verbose) return null;
      const p = e.provenance;
      return `    ${p.role}.${p.op} attempt ${p.attempt} via ${p.model} (${p.tier}), ${p.usage.prompt_tokens}+${p.usage.completion_tokens} tokens, ${Math.round(p.latency_ms)} ms`;
    }
    case "token":
      return null;
    case "tool_call":
      return verbose ? `    tool ${e.tool} ${argsLine(e.args, e.args_truncated)}` : null;
    case "tool_result":
      return verbose
        ? `    tool ${e.tool} ${e.ok ? "ok" : "failed"} in ${Math.round(e.latency_ms)} ms${e.content ? `: ${brief(e.content, 70)}` : ""}`
        : null;
    case "error":
      return `  ✗ ${e.component ? `${e.component}: ` : ""}${e.message} [${e.code}]`;
    case "complete":
      return null;
    case "routing":
      return `  → ${e.agent} agent (confidence ${e.confidence}${e.is_low_confidence ? ", low" : ""})${e.reason ? `: ${brief(e.reason)}` : ""}`;
    case "orchestration":
      return `  → ${e.next_agent} (orchestrator ${e.layer}, clarifications ${e.clarification_count}/${e.max_clarifications})${verbose && e.reason ? `: ${brief(e.reason)}` : ""}`;
    case "config": {
      if (!verbose) return null;
      const settings = Object.entries(e.settings)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(", ");
      return `    ${e.agent} agent settings: ${settings ? brief(settings, 100) : "defaults"}`;
    }
    case "handoff":
      return `  → handoff ${e.source_agent} → ${e.target_agent}: ${brief(e.task_description)}`;
    case "handoff_refused":
      return `  ✗ handoff ${e.from} → ${e.to} refused (${REFUSED[e.reason]})`;
    case "source":
      return `    source: ${brief(e.title, 60)} (${e.url ?? e.path ?? ""})`;
    case "code_result": {
      const exit = e.exit_code === null ? "stopped by a limit" : `exit ${e.exit_code}`;
      const shown = verbose ? e.stdout || e.stderr || e.result || "" : "";
      return `    ${e.language} ran: ${exit}, ${Math.round(e.duration_ms)} ms${shown ? `: ${brief(shown, 70)}` : ""}`;
    }
    case "visualization": {
      const title = typeof e.spec.title === "string" ? e.spec.title : "untitled";
      return `    chart "${brief(title, 60)}" (Vega-Lite; --json prints the spec)`;
    }
  }
}

/** The closing block of `agentmesh ask`. */
export function renderFinal(e: Extract<SessionEvent, { type: "complete" }>): string {
  return [
    ``,
    `Answer (${e.status}):`,
    indent(e.final_answer),
    ``,
    `Reasoning trace:`,
    indent(e.final_reasoning_trace),
  ].join("\n");
}

const indent = (s: string) =>
  s
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");

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
    ...log.map(
      (l) =>
        `  v${l.version}  ${new Date(l.now).toISOString()}  ${l.input_id}  → ${l.status}${l.commands.length ? `  [${l.commands.join("; ")}]` : ""}`,
    ),
  ];
  return lines.join("\n");
}
