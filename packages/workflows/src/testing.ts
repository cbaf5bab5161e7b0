/**
 * Test kit for this package's tests: a harness that drives one session through step() the way
 * the coordinator does, and checks every applied outcome against the contracts as it goes.
 */
import {
  compiled,
  OutboxEntry,
  SCHEMA_VERSION,
  SessionState,
  findOp,
  inputIds,
  type AwaitedTask,
  type Budgets,
  type CriticChainData,
  type InboxInput,
  type Provenance,
  type SessionEvent,
  type SessionOptions,
  type TaskEnvelope,
  type Usage,
  type WireError,
} from "@agentmesh/contracts";
import type { z } from "zod";
import { createSession, step } from "./runtime.js";
import type { RuntimeDefaults, StepOutcome } from "./types.js";

/** A valid session id for tests. */
export const SID = "sess_test_0001";

/**
 * Matches a task id (after `head`, e.g. `task:` for a timer member) the runtime minted for the
 * `i`-th dispatch, attempt `a`, of version `v` of session `sid`, whatever input made the version.
 */
export const mintedId = (head: string, v: number, i: number, a: number, sid = SID): RegExp => {
  const literal = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${literal(head)}${literal(sid)}\\.${v}\\.${i}\\.${a}\\.[0-9a-z]{1,7}$`);
};
/** The clock at session creation. */
export const T0 = 1_700_000_000_000;
/** No budget limits. */
export const UNLIMITED: Budgets = { max_steps: null, max_tokens: null, max_cost_usd: null, max_wall_ms: null };
/** Defaults with task and session deadlines, a one-day pause limit, no budgets and no ceilings. */
export const DEFAULTS: RuntimeDefaults = {
  budgets: UNLIMITED,
  ceilings: UNLIMITED,
  taskDeadlineMs: 60_000,
  sessionDeadlineMs: 3_600_000,
  pauseTimeoutMs: 86_400_000,
};
/** The question every test asks unless it says otherwise. */
export const QUESTION = "What is CRISPR and who invented it?";

/** Agent outputs, shaped as the contracts' response schemas. */
export const out = {
  plan: (research_steps: string[], expert_steps: string[] = ["Combine the findings"]) => ({
    research_steps,
    expert_steps,
  }),
  approve: (feedback = "fine") => ({ decision: "approve", feedback }),
  reject: (feedback: string) => ({ decision: "reject", feedback }),
  research: (result: string) => ({ result }),
  answer: (expert_answer: string, expert_reasoning = "from the research") => ({ expert_answer, expert_reasoning }),
  finalize: (final_answer: string, final_reasoning_trace = "trace") => ({ final_answer, final_reasoning_trace }),
} as const;

/** A typed agent failure. */
export const failure = (code: WireError["code"], retryable: boolean, message = `${code} happened`): WireError => ({
  code,
  message,
  retryable,
  component: null,
});

/** Provenance of one task's attempt with the given usage. */
export function provenance(task: Pick<AwaitedTask, "role" | "op" | "attempt">, usage: Partial<Usage> = {}): Provenance {
  return {
    role: task.role,
    op: task.op,
    model: "scripted",
    tier: "standard",
    prompt_version: "test",
    attempt: task.attempt,
    usage: { prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.001, model_calls: 1, ...usage },
    latency_ms: 3,
  };
}

/** A result inbox message for `task`. */
export function resultFor(
  task: Pick<AwaitedTask, "task_id" | "role" | "op" | "attempt">,
  output: unknown,
  usage: Partial<Usage> = {},
  sid = SID,
): InboxInput {
  return {
    v: SCHEMA_VERSION,
    kind: "result",
    session_id: sid,
    input_id: inputIds.result(task.task_id),
    task_id: task.task_id,
    role: task.role,
    op: task.op,
    outcome: { ok: true, output, provenance: provenance(task, usage) },
  };
}

/** A failure inbox message for `task`. */
export function failureFor(
  task: Pick<AwaitedTask, "task_id" | "role" | "op" | "attempt">,
  error: WireError,
): InboxInput {
  return {
    v: SCHEMA_VERSION,
    kind: "result",
    session_id: SID,
    input_id: inputIds.result(task.task_id),
    task_id: task.task_id,
    role: task.role,
    op: task.op,
    outcome: { ok: false, error, provenance: null },
  };
}

/** The inbox messages the coordinator itself produces. */
export const inputs = {
  start: (sid = SID): InboxInput => ({
    v: SCHEMA_VERSION,
    kind: "start",
    session_id: sid,
    input_id: inputIds.start(sid),
    workflow: "critic-chain",
    query: QUESTION,
    options: {},
  }),
  cancel: (reason = "user asked"): InboxInput => ({
    v: SCHEMA_VERSION,
    kind: "cancel",
    session_id: SID,
    input_id: inputIds.cancel("c1"),
    reason,
  }),
  taskTimer: (taskId: string | null): InboxInput => ({
    v: SCHEMA_VERSION,
    kind: "timer",
    session_id: SID,
    input_id: inputIds.timer(taskId ?? "none"),
    task_id: taskId,
    reason: "task_deadline",
  }),
  sessionTimer: (): InboxInput => ({
    v: SCHEMA_VERSION,
    kind: "timer",
    session_id: SID,
    input_id: inputIds.sessionTimer(SID),
    task_id: null,
    reason: "session_deadline",
  }),
  userReply: (text: string): InboxInput => ({
    v: SCHEMA_VERSION,
    kind: "user_reply",
    session_id: SID,
    input_id: inputIds.user("u1"),
    text,
  }),
} as const;

type Applied = Extract<StepOutcome, { kind: "apply" }>;

/** A session running critic-chain, so tests read its data without narrowing the union each time. */
export type CriticChainSession = SessionState & { data: CriticChainData };

/** Narrows a session to critic-chain; throws (failing the test) for any other workflow's data. */
export function asCriticChain(s: SessionState): CriticChainSession {
  if (s.data.workflow !== "critic-chain") throw new Error(`expected critic-chain data, got ${s.data.workflow}`);
  return s as CriticChainSession;
}

/**
 * Parses with the schema and with its compiled form (what the services validate with) and throws
 * unless both give the same value: every state and message a workflow test makes checks the two agree.
 */
function parseBoth(schema: z.ZodType, value: unknown, what: string): void {
  const plain = JSON.stringify(schema.parse(value));
  const fast = compiled(schema).safeParse(value);
  if (!fast.success || JSON.stringify(fast.data) !== plain)
    throw new Error(`the compiled ${what} schema disagrees with the schema on ${JSON.stringify(value).slice(0, 300)}`);
}

/** Throws unless every part of an applied outcome is what the contracts allow. */
export function checkApplied(o: Applied): void {
  parseBoth(SessionState, o.state, "SessionState");
  for (const entry of o.outbox) {
    parseBoth(OutboxEntry, entry, "OutboxEntry");
    if (entry.kind === "task") {
      const def = findOp(entry.task.role, entry.task.op);
      if (!def) throw new Error(`unknown op ${entry.task.role}.${entry.task.op}`);
      parseBoth(def.request, entry.task.input, `${entry.task.role}.${entry.task.op} request`);
    }
  }
}

/** Drives one session, recording every input with its time like the transition log does. */
export function harness(
  opts: { options?: SessionOptions; defaults?: RuntimeDefaults; query?: string; stepMs?: number } = {},
) {
  const defaults = opts.defaults ?? DEFAULTS;
  const initial = asCriticChain(
    createSession({
      sessionId: SID,
      workflow: "critic-chain",
      query: opts.query ?? QUESTION,
      options: opts.options ?? {},
      now: T0,
      defaults,
    }),
  );
  const h = {
    defaults,
    initial,
    state: initial,
    now: T0,
    log: [] as Array<{ input: InboxInput; now: number }>,
    last: null as StepOutcome | null,
    /** Steps one input at the current time (then moves the clock on), keeping the state if applied. */
    send(input: InboxInput): StepOutcome {
      const outcome = step(h.state, input, { now: h.now, defaults });
      h.log.push({ input, now: h.now });
      h.now += opts.stepMs ?? 1000;
      h.last = outcome;
      if (outcome.kind === "apply") {
        checkApplied(outcome);
        h.state = asCriticChain(outcome.state);
      }
      return outcome;
    },
    /** Like send, but fails the test unless the input applied. */
    apply(input: InboxInput): Applied {
      const o = h.send(input);
      if (o.kind !== "apply") throw new Error(`expected apply, got drop ${o.reason}: ${o.detail}`);
      return o;
    },
    /** The one task the session awaits. */
    awaited(): AwaitedTask {
      const [task, ...more] = h.state.meta.awaiting;
      if (!task || more.length > 0)
        throw new Error(`expected exactly one awaited task, have ${h.state.meta.awaiting.length}`);
      return task;
    },
    /** Answers the awaited task with `output`. */
    reply(output: unknown, usage: Partial<Usage> = {}): Applied {
      return h.apply(resultFor(h.awaited(), output, usage));
    },
    /** Fails the awaited task. */
    fail(error: WireError): Applied {
      return h.apply(failureFor(h.awaited(), error));
    },
  };
  return h;
}

/** The tasks of an outcome's outbox. */
export const tasksOf = (o: StepOutcome): TaskEnvelope[] =>
  o.kind === "apply" ? o.outbox.flatMap((e) => (e.kind === "task" ? [e.task] : [])) : [];

/** The events of an outcome's outbox. */
export const eventsOf = (o: StepOutcome): SessionEvent[] =>
  o.kind === "apply" ? o.outbox.flatMap((e) => (e.kind === "event" ? [e.event] : [])) : [];

/** The single task of an outcome, with its input typed loosely for assertions. */
export function onlyTask(o: StepOutcome): TaskEnvelope & {
  input: Record<string, unknown> & { message: { content: string; step_id: number | null; receiver: string } };
} {
  const tasks = tasksOf(o);
  if (tasks.length !== 1) throw new Error(`expected one task, got ${tasks.length}`);
  return tasks[0] as never;
}

/** Records every event a harness's session emits from now on (wraps its `send`). */
export function recordEvents(h: { send(input: InboxInput): StepOutcome }): SessionEvent[] {
  const events: SessionEvent[] = [];
  const send = h.send;
  h.send = (input) => {
    const o = send(input);
    events.push(...eventsOf(o));
    return o;
  };
  return events;
}
