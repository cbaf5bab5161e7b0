/**
 * Test kit for blackboard sessions: valid outputs of every blackboard op, a harness that drives
 * one session through step() the way the coordinator does, and a scripted set of agents.
 */
import {
  SCHEMA_VERSION,
  inputIds,
  isTerminal,
  type AwaitedTask,
  type BlackboardData,
  type CriticReport,
  type ErrorCode,
  type ExecutionStrategy,
  type InboxInput,
  type Intent,
  type MemoryState,
  type PerceptionSnapshot,
  type ThreadCarry,
  type RetrievalBundle,
  type SessionOptions,
  type SessionState,
  type StepResult,
  type StrategyProfile,
  type TaskEnvelope,
  type ToolList,
  type WireError,
} from "@agentmesh/contracts";
import { createSession, step } from "./runtime.js";
import { DEFAULTS, SID, T0, checkApplied, failureFor, inputs, resultFor } from "./testing.js";
import type { RuntimeDefaults, StepOutcome } from "./types.js";

/** A session running blackboard. */
export type BlackboardSession = SessionState & { data: BlackboardData };

export function asBlackboard(s: SessionState): BlackboardSession {
  if (s.data.workflow !== "blackboard") throw new Error(`expected blackboard data, got ${s.data.workflow}`);
  return s as BlackboardSession;
}

export const ARITHMETIC_QUESTION = "What is 2 + 2 * 3?";
export const CORPUS_QUESTION = "What does the design document say about session deadlines?";
const DIGEST = "ab".repeat(32);

/** Valid outputs of each blackboard op. */
export const bbOut = {
  perception: (intent: Intent = "arithmetic", over: Partial<PerceptionSnapshot> = {}): PerceptionSnapshot => ({
    entities: [{ text: "2", kind: "number" }],
    intent,
    constraints: [],
    sub_goals: ["find the value"],
    confidence: 0.9,
    suspicious_patterns: [],
    goal_satisfied: null,
    notes: "",
    ...over,
  }),
  tools: (): ToolList => ({
    tools: [
      {
        name: "calculator",
        description: "Evaluate a math expression exactly",
        input_schema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
      },
      {
        name: "corpus_search",
        description: "Search the local document corpus",
        input_schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
      },
      {
        name: "web_search",
        description: "Search the web",
        input_schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
      },
    ],
  }),
  memory: (note = "noted"): MemoryState => ({
    short_term: [{ kind: "note", content: note, step_index: null }],
    banned_tools: [],
    successful_tools: [],
    patterns: [],
    long_term_refs: [],
  }),
  retrieval: (): RetrievalBundle => ({
    items: [
      {
        source: "corpus",
        content: "Each session has a wall-clock deadline.",
        relevance: 0.9,
        citation: { path: "docs/design.md", passage: "Each session has a wall-clock deadline" },
      },
      { source: "memory", content: "The user asked about deadlines.", relevance: 0.4, citation: null },
    ],
    summary: "The design gives every session a wall-clock deadline.",
    open_questions: [],
    corpus_ranking: { method: "bm25", note: "BM25 only: no embeddings endpoint is configured" },
  }),
  plan: (tools: readonly string[] = ["calculator"]) => ({
    steps: [
      ...tools.map((tool, i) => ({
        description: `Use ${tool} for part ${i + 1}`,
        tool,
        args:
          tool === "calculator"
            ? [{ name: "expression", value: "2 + 2 * 3" }]
            : [{ name: "query", value: "session deadlines" }],
        expected_outcome: "a value",
      })),
      { description: "Summarize the answer", tool: "summarize", args: [], expected_outcome: "the final answer" },
    ],
    rationale: "compute, then answer",
  }),
  ok: (strategy: ExecutionStrategy, tool: string, output: string, over: Partial<StepResult> = {}): StepResult => ({
    strategy,
    tool,
    ok: true,
    output,
    error: null,
    latency_ms: 7,
    attempts: 1,
    records: [{ tool, args_digest: DIGEST, latency_ms: 7, outcome: "ok", attempt: 1 }],
    citations: [],
    ...over,
  }),
  fail: (strategy: ExecutionStrategy, tool: string, code: ErrorCode, retryable: boolean): StepResult => ({
    strategy,
    tool,
    ok: false,
    output: null,
    error: { code, message: `${code} happened`, retryable },
    latency_ms: 9,
    attempts: retryable ? 3 : 1,
    records: [{ tool, args_digest: DIGEST, latency_ms: 9, outcome: code, attempt: 1 }],
    citations: [],
  }),
  report: (acceptable = true, over: Partial<CriticReport> = {}): CriticReport => ({
    quality: acceptable ? 0.9 : 0.2,
    hallucination_risk: 0.1,
    issues: acceptable ? [] : ["the result does not answer the step"],
    is_acceptable: acceptable,
    rewrite_suggestion: null,
    requires_human_input: false,
    question_for_human: null,
    ...over,
  }),
} as const;

/** A loosely typed request, for assertions. */
export type Loose = Record<string, unknown>;
/** The key of an awaited task: `role.op`, plus `:strategy` for executor strategies. */
export const keyOf = (t: Pick<AwaitedTask, "role" | "op" | "tag">) => `${t.role}.${t.op}${t.tag ? `:${t.tag}` : ""}`;

type Applied = Extract<StepOutcome, { kind: "apply" }>;

/** The start input of the harness's session. */
const blackboardStart = (query: string, options: SessionOptions): InboxInput => ({
  v: SCHEMA_VERSION,
  kind: "start",
  session_id: SID,
  input_id: inputIds.start(SID),
  workflow: "blackboard",
  query,
  options,
});

/** The n-th reply of a person to the session. */
const personReply = (n: number, text: string): InboxInput => ({
  v: SCHEMA_VERSION,
  kind: "user_reply",
  session_id: SID,
  input_id: inputIds.user(`u${n}`),
  text,
});

/** Drives one blackboard session, recording every input with its time like the transition log does. */
export function bbHarness(
  opts: {
    profile?: StrategyProfile;
    query?: string;
    defaults?: RuntimeDefaults;
    options?: SessionOptions;
    stepMs?: number;
    /** What the thread hands on (its long-term references). */
    carry?: ThreadCarry;
    /** Check every applied outcome against the contracts (default true; a determinism replica may skip it). */
    validate?: boolean;
  } = {},
) {
  const defaults = opts.defaults ?? DEFAULTS;
  const query = opts.query ?? ARITHMETIC_QUESTION;
  const options: SessionOptions = { ...(opts.profile ? { strategy_profile: opts.profile } : {}), ...opts.options };
  const initial = asBlackboard(
    createSession({
      sessionId: SID,
      workflow: "blackboard",
      query,
      options,
      now: T0,
      defaults,
      ...(opts.carry ? { carry: opts.carry } : {}),
    }),
  );
  const startInput = blackboardStart(query, options);
  let replies = 0;
  const h = {
    defaults,
    initial,
    state: initial,
    now: T0,
    log: [] as Array<{ input: InboxInput; now: number }>,
    last: null as StepOutcome | null,
    /** Every task ever dispatched, by id, so tests can read what an agent was sent. */
    sent: new Map<string, TaskEnvelope>(),
    send(input: InboxInput): StepOutcome {
      const outcome = step(h.state, input, { now: h.now, defaults });
      h.log.push({ input, now: h.now });
      h.now += opts.stepMs ?? 1000;
      h.last = outcome;
      if (outcome.kind === "apply") {
        if (opts.validate ?? true) checkApplied(outcome);
        h.state = asBlackboard(outcome.state);
        for (const e of outcome.outbox) if (e.kind === "task") h.sent.set(e.task.task_id, e.task);
      }
      return outcome;
    },
    apply(input: InboxInput): Applied {
      const o = h.send(input);
      if (o.kind !== "apply") throw new Error(`expected apply, got drop ${o.reason}: ${o.detail}`);
      return o;
    },
    start: (): Applied => h.apply(startInput),
    startInput,
    /** The one awaited task with this key (`role.op` or `executor.execute:rag`). */
    task(key: string): AwaitedTask {
      const hits = h.state.meta.awaiting.filter((t) => keyOf(t) === key || `${t.role}.${t.op}` === key);
      if (hits.length !== 1)
        throw new Error(`expected one awaited ${key}, have [${h.state.meta.awaiting.map(keyOf).join(", ")}]`);
      return hits[0] as AwaitedTask;
    },
    /** The request a task was sent with. */
    input(task: AwaitedTask): Loose {
      const env = h.sent.get(task.task_id);
      if (!env) throw new Error(`no envelope for ${task.task_id}`);
      return env.input as Loose;
    },
    answer: (key: string, output: unknown): Applied => h.apply(resultFor(h.task(key), output)),
    failTask: (key: string, error: WireError): Applied => h.apply(failureFor(h.task(key), error)),
    deadline: (key: string): Applied => h.apply(taskTimer(h.task(key).task_id)),
    reply(text: string): StepOutcome {
      replies++;
      return h.send(personReply(replies, text));
    },
    sessionTimer: (): StepOutcome => h.send(inputs.sessionTimer()),
  };
  return h;
}

export type BbHarness = ReturnType<typeof bbHarness>;

/** A task deadline input. */
export const taskTimer = (taskId: string): InboxInput => ({
  v: SCHEMA_VERSION,
  kind: "timer",
  session_id: SID,
  input_id: inputIds.timer(taskId),
  task_id: taskId,
  reason: "task_deadline",
});

/** How a scripted agent answers one task: an output, a typed failure, or its deadline passing. */
export type Answer = { readonly output: unknown } | { readonly error: WireError } | { readonly timeout: true };
export type Script = (task: AwaitedTask, input: Loose, data: BlackboardData) => Answer;

/** Agents that answer every op well: arithmetic through the calculator, corpus passages with citations, no web provider. */
export const goodAgents: Script = (task, input) => {
  switch (keyOf(task)) {
    case "perception.perceive":
      return {
        output: input.kind === "query" ? bbOut.perception() : bbOut.perception("arithmetic", { goal_satisfied: true }),
      };
    case "executor.list_tools":
      return { output: bbOut.tools() };
    case "memory.update":
      return { output: bbOut.memory(`after ${(input.event as { kind: string }).kind}`) };
    case "retriever.retrieve":
      return { output: bbOut.retrieval() };
    case "decision.plan":
      return { output: bbOut.plan() };
    case "executor.execute:tool": {
      const tool = (input.step as { tool: string }).tool;
      return { output: bbOut.ok("tool", tool, tool === "summarize" ? "2 + 2 * 3 = 8" : "8") };
    }
    case "executor.execute:rag":
      return {
        output: bbOut.ok("rag", "corpus_search", "a passage", {
          citations: [{ path: "docs/a.md", passage: "a passage" }],
        }),
      };
    case "executor.execute:web":
      return { output: bbOut.fail("web", "web_search", "tool_unavailable", false) };
    case "critic.report":
      return { output: bbOut.report(true) };
    default:
      throw new Error(`no scripted answer for ${keyOf(task)}`);
  }
};

/** The inbox input for a scripted answer. */
export function answerInput(task: AwaitedTask, a: Answer): InboxInput {
  if ("timeout" in a) return taskTimer(task.task_id);
  if ("error" in a) return failureFor(task, a.error);
  return resultFor(task, a.output);
}

/** Answers awaited tasks (oldest first) with `script` until the session ends, pauses, or `max` inputs. */
export function drive(h: BbHarness, script: Script, max = 300): void {
  for (let n = 0; n < max && !isTerminal(h.state.meta.status) && h.state.meta.status !== "awaiting_user"; n++) {
    const task = h.state.meta.awaiting[0];
    if (!task) throw new Error("a running session awaits nothing");
    h.apply(answerInput(task, script(task, h.input(task), h.state.data)));
  }
}
