/**
 * Test kit for supervisor sessions: valid outputs of every supervisor op and a harness that drives
 * one session through step() the way the coordinator does, checking every outcome against the contracts.
 */
import {
  SCHEMA_VERSION,
  inputIds,
  type AwaitedTask,
  type ChatMessage,
  type CodeLanguage,
  type HaloCitation,
  type InboxInput,
  type SessionEvent,
  type SessionOptions,
  type SessionState,
  type SupervisorAgent,
  type SupervisorData,
  type TaskEnvelope,
  type ToolCallOutcome,
  type WireError,
} from "@agentmesh/contracts";
import { createSession, step } from "./runtime.js";
import { DEFAULTS, SID, T0, checkApplied, eventsOf, failureFor, resultFor, tasksOf } from "./testing.js";
import type { RuntimeDefaults, StepOutcome } from "./types.js";

export type SupervisorSession = SessionState & { data: SupervisorData };

export const QUERY = "Compare the growth of the three regions and explain it";
/** Every tool the supervisor may offer (a deployment with a web key and an images endpoint). */
export const ALL_TOOLS = ["web_search", "corpus_search", "generate_image", "analyze_image", "run_python", "run_js"];

/** Valid outputs of the supervisor's ops. */
export const sup = {
  routed: (agent: SupervisorAgent, confidence = 0.9, reason = "it fits") => ({ agent, confidence, reason }),
  answer: (text: string) => ({ action: "answer", text }),
  tool: (tool: string, args: Record<string, unknown> = { query: "q" }) => ({ action: "tool", tool, arguments: args }),
  handoff: (target: SupervisorAgent, task_description = `please take this on, ${target}`, context?: string) => ({
    action: "tool",
    tool: `handoff_to_${target}`,
    arguments: { task_description, ...(context === undefined ? {} : { context }) },
  }),
  code: (code: string, language: CodeLanguage = "python", explanation = "It computes the answer.") => ({
    action: "code",
    language,
    code,
    explanation,
  }),
  writingBrief: () => ({
    action: "brief",
    writing_type: "essay",
    tone: "formal",
    audience: "students",
    key_points: ["one"],
  }),
  dataPlan: (chart = false) => ({ action: "plan", analysis_plan: "Sum each region's growth", chart }),
  dataCode: (code = "print(1)", chart: Record<string, unknown> | null = null) => ({ code, chart }),
  analysis: (analysis = "the analysis") => ({ analysis }),
  synthesis: (synthesis = "the synthesis") => ({ synthesis }),
  report: (response = "The report [1].") => ({ response }),
  outline: (outline = "1. intro") => ({ outline }),
  draft: (draft = "The draft.") => ({ draft }),
  final: (final_content = "The final text.") => ({ final_content }),
  summary: (summary = "The data shows growth.") => ({ summary }),
} as const;

export const source = (n: number): HaloCitation => ({
  title: `Source ${n}`,
  url: `https://example.com/${n}`,
  path: null,
  snippet: `snippet ${n}`,
});

/** A tool call's outcome: ok with its content and citations, or failed. */
export function outcome(
  tool: string,
  content: string,
  opts: { citations?: HaloCitation[]; ok?: boolean } = {},
): ToolCallOutcome {
  const ok = opts.ok ?? true;
  return {
    tool,
    ok,
    content,
    error: ok ? null : { code: "tool_error", message: content.slice(0, 500), retryable: true },
    latency_ms: 12,
    attempts: 1,
    citations: opts.citations ?? [],
    code: null,
  };
}

/** A code tool's outcome: exit 0 with its stdout, or a raised error. */
export function codeOutcome(
  exit_code: number | null,
  stdout: string,
  error: string | null = null,
  language: CodeLanguage = "python",
): ToolCallOutcome {
  const ok = exit_code === 0 && error === null;
  return {
    tool: language === "python" ? "run_python" : "run_js",
    ok,
    content: ok ? stdout : (error ?? "failed"),
    error: ok ? null : { code: "tool_error", message: (error ?? "failed").slice(0, 500), retryable: false },
    latency_ms: 40,
    attempts: 1,
    citations: [],
    // as the sandbox reports a raise: the traceback in `error`, nothing on stderr
    code: { language, exit_code, stdout, stderr: "", result: null, error, truncated: false, duration_ms: 35 },
  };
}

/** The start input of the harness's session. */
const supervisorStart = (query: string, options: SessionOptions): InboxInput => ({
  v: SCHEMA_VERSION,
  kind: "start",
  session_id: SID,
  input_id: inputIds.start(SID),
  workflow: "supervisor",
  query,
  options,
});

/** Drives one supervisor session through step(), checking every applied outcome against the contracts. */
export function supervisorHarness(
  opts: {
    options?: SessionOptions;
    tools?: string[];
    messages?: ChatMessage[];
    query?: string;
    defaults?: Partial<RuntimeDefaults>;
    /** The session's owner (the gateway's API key name). */
    owner?: string;
  } = {},
) {
  const defaults: RuntimeDefaults = { ...DEFAULTS, ...opts.defaults, supervisor: { tools: opts.tools ?? ALL_TOOLS } };
  const query = opts.query ?? QUERY;
  const created = createSession({
    sessionId: SID,
    workflow: "supervisor",
    query,
    options: opts.options ?? {},
    now: T0,
    defaults,
    messages: opts.messages ?? [],
    ...(opts.owner === undefined ? {} : { owner: opts.owner }),
  });
  const h = {
    state: created as SupervisorSession,
    now: T0,
    outcomes: [] as StepOutcome[],
    /** Each dispatched task's tag (the supervisor's node), by task id. */
    nodes: new Map<string, string>(),
    get data(): SupervisorData {
      return h.state.data;
    },
    send(input: InboxInput): StepOutcome {
      h.now += 100;
      const o = step(h.state, input, { now: h.now, defaults });
      h.outcomes.push(o);
      if (o.kind === "apply") {
        checkApplied(o);
        h.state = o.state as SupervisorSession;
        for (const a of h.state.meta.awaiting) if (a.tag !== undefined) h.nodes.set(a.task_id, a.tag);
      }
      return o;
    },
    start: () => h.send(supervisorStart(query, opts.options ?? {})),
    awaited(): AwaitedTask {
      const [task, ...more] = h.state.meta.awaiting;
      if (!task || more.length > 0)
        throw new Error(
          `expected one awaited task, have ${h.state.meta.awaiting.length} (status ${h.state.meta.status})`,
        );
      return task;
    },
    /** The awaited task as dispatched (its input included). */
    current(): TaskEnvelope {
      const id = h.awaited().task_id;
      const t = h.tasks().findLast((x) => x.task_id === id);
      if (!t) throw new Error(`task ${id} was never dispatched`);
      return t;
    },
    /** Answers the awaited task, first checking it is `role.op`. */
    reply(op: string, output: unknown): StepOutcome {
      const t = h.awaited();
      if (`${t.role}.${t.op}` !== op) throw new Error(`awaiting ${t.role}.${t.op}, not ${op}`);
      return h.send(resultFor(t, output));
    },
    fail(op: string, error: WireError): StepOutcome {
      const t = h.awaited();
      if (`${t.role}.${t.op}` !== op) throw new Error(`awaiting ${t.role}.${t.op}, not ${op}`);
      return h.send(failureFor(t, error));
    },
    /** Every task ever dispatched, in order. */
    tasks: (): TaskEnvelope[] => h.outcomes.flatMap(tasksOf),
    ops: (): string[] => h.tasks().map((t) => `${t.role}.${t.op}`),
    events: (): SessionEvent[] => h.outcomes.flatMap(eventsOf),
    ofType: <T extends SessionEvent["type"]>(type: T) =>
      h.events().filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type),
    /** The input of the awaited task. */
    input: (): Record<string, unknown> => h.current().input as Record<string, unknown>,
  };
  return h;
}

export type SupervisorHarness = ReturnType<typeof supervisorHarness>;

/** A session started with `mode` (no router). */
export function started(mode: SupervisorAgent, opts: Parameters<typeof supervisorHarness>[0] = {}): SupervisorHarness {
  const h = supervisorHarness({ ...opts, options: { ...opts.options, mode } });
  h.start();
  return h;
}

/** The op of each agent's node that may call a tool or hand off (its first node). */
export const FIRST_OP: Readonly<Record<SupervisorAgent, string>> = {
  chat: "chat.respond",
  research: "researcher.search",
  code: "coder.generate",
  writing: "writer.analyze",
  data: "analyst.plan",
};
