import {
  LIMITS,
  SCHEMA_VERSION,
  compiled,
  findOp,
  isTerminal,
  taskId,
  timerMember,
  fnv1a,
  AgentmeshError,
  formatZodError,
  redactArgs,
  scanDangerous,
  type AwaitedTask,
  type CancelNotice,
  type EventDraft,
  type OutboxEntry,
  type SessionData,
  type SessionEvent,
  type SessionMeta,
  type SessionState,
  type SessionStatus,
  type TaskEnvelope,
  type WireError,
} from "@agentmesh/contracts";
import { boundedArgs, stage } from "./events.js";
import type { Control, StepContext, StepOutcome, TaskSpec, TimerEntry, WorkflowDefinition } from "./types.js";

/**
 * One transition being built. step() fills it from the input and the workflow's Control, then
 * seal() turns it into the new state and the outbox. Local and short-lived, so mutating it is
 * safe: the caller's SessionState is never touched.
 */
export interface Draft {
  readonly prev: SessionState;
  /** The id of the input this transition applies: the tasks it mints carry its digest (`taskId`). */
  readonly madeBy: string;
  readonly ctx: StepContext;
  readonly def: WorkflowDefinition;
  meta: SessionMeta;
  data: SessionData;
  readonly tasks: TaskEnvelope[];
  readonly events: EventDraft[];
  cancel: CancelNotice | null;
  readonly commands: string[];
  readonly timers: TimerEntry[];
  readonly clear: string[];
  /** The workflow's attributes for the transition's span (its decision record), merged in order. */
  span: Record<string, string | number | boolean> | null;
}

/** Starts a transition of `prev`; the version it will write is `prev.meta.version + 1`. */
export function openDraft(prev: SessionState, def: WorkflowDefinition, ctx: StepContext, madeBy: string): Draft {
  const meta: SessionMeta = { ...prev.meta, awaiting: [...prev.meta.awaiting], usage: { ...prev.meta.usage } };
  return {
    prev,
    madeBy,
    ctx,
    def,
    meta,
    data: prev.data,
    tasks: [],
    events: [],
    cancel: null,
    commands: [],
    timers: [],
    clear: [],
    span: null,
  };
}

const newVersion = (d: Draft) => d.prev.meta.version + 1;

/** Removes an awaited task: its result (or its deadline) has arrived, so its timer goes too. */
export function consume(d: Draft, task: AwaitedTask): void {
  d.meta.awaiting = d.meta.awaiting.filter((a) => a.task_id !== task.task_id);
  d.clear.push(timerMember.task(task.task_id));
}

/** Active time of a session: wall clock since creation minus the time it waited for a person. */
export function activeElapsed(meta: SessionMeta, now: number): number {
  const waiting = meta.pause === null ? 0 : Math.max(0, now - meta.pause.since);
  return now - meta.created_at - meta.paused_ms - waiting;
}

/** Removes the session deadline from the timer set, and any re-arm of it this transition made. */
function disarmSession(d: Draft): void {
  const member = timerMember.session(d.meta.session_id);
  const armed = d.timers.findIndex((t) => t.member === member);
  if (armed >= 0) d.timers.splice(armed, 1);
  d.clear.push(member);
}

/**
 * Stops the wall clock while the session waits for a person: the deadline is put aside (what
 * was left of it is kept) and its timer cleared, so it cannot end a session nobody is working on.
 * The session timer is armed instead at the pause's expiry: a question nobody answers ends the
 * session (with its terminal events) before its stored keys expire in silence.
 */
function pause(d: Draft, question: string): void {
  const m = d.meta;
  m.status = "awaiting_user";
  if (m.pause === null) {
    const limit = d.ctx.defaults.pauseTimeoutMs;
    const expiresAt = limit === null ? null : d.ctx.now + limit;
    m.pause = {
      since: d.ctx.now,
      deadline_left_ms: m.deadline_at === null ? null : Math.max(0, m.deadline_at - d.ctx.now),
      expires_at: expiresAt,
    };
    if (m.deadline_at !== null) disarmSession(d);
    m.deadline_at = null;
    if (expiresAt !== null) d.timers.push({ member: timerMember.session(m.session_id), dueAt: expiresAt });
  }
  d.events.push(stage("awaiting_user", "running", question));
  d.commands.push("await_user");
}

/** Restarts the wall clock when a person answered: the pause is added to `paused_ms` and the deadline re-armed that much later. */
export function resume(d: Draft): void {
  const m = d.meta;
  const p = m.pause;
  if (p === null) return;
  const waited = Math.max(0, d.ctx.now - p.since);
  m.paused_ms += waited;
  m.pause = null;
  m.status = "running";
  // The pause's expiry timer goes; a re-armed deadline below reuses the member (adds run after clears).
  if (p.expires_at !== null) d.clear.push(timerMember.session(m.session_id));
  if (p.deadline_left_ms !== null) {
    m.deadline_at = d.ctx.now + p.deadline_left_ms;
    d.timers.push({ member: timerMember.session(m.session_id), dueAt: m.deadline_at });
  }
  d.commands.push(`resume after ${waited} ms`);
}

const jsonBytes = (s: string) => new TextEncoder().encode(JSON.stringify(s)).length;

/** The longest prefix of `s` whose JSON is at most `maxBytes`, never splitting a surrogate pair. */
function cutJson(s: string, maxBytes: number): string {
  if (jsonBytes(s) <= maxBytes) return s;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (jsonBytes(s.slice(0, mid)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  const code = s.charCodeAt(lo - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? lo - 1 : lo);
}

/** Room in a `complete` event for the stamp, the status and the truncation note. */
const COMPLETE_OVERHEAD_BYTES = 1024;

/**
 * The final texts as the `complete` event carries them: whole when they fit in
 * `LIMITS.maxCompleteEventBytes`, else cut (the trace to an eighth of the room first, the
 * answer to the rest) with `truncated` and where the whole text is: the workflow's final fields
 * in the stored state, which keep it.
 */
export function completeTexts(
  sessionId: string,
  answer: string,
  trace: string,
): Pick<
  Extract<SessionEvent, { type: "complete" }>,
  "final_answer" | "final_reasoning_trace" | "truncated" | "full_text_at"
> {
  const room = LIMITS.maxCompleteEventBytes - COMPLETE_OVERHEAD_BYTES;
  if (jsonBytes(answer) + jsonBytes(trace) <= room) return { final_answer: answer, final_reasoning_trace: trace };
  const keptTrace = cutJson(trace, Math.floor(room / 8));
  return {
    final_answer: cutJson(answer, room - jsonBytes(keptTrace)),
    final_reasoning_trace: keptTrace,
    truncated: true,
    full_text_at: `the session's state (agentmesh inspect ${sessionId}): data.final_answer and data.final_reasoning_trace`,
  };
}

/** Ends the session. Agents still working for it are told to stop; `notify` forces the notice. */
export function end(
  d: Draft,
  status: SessionStatus,
  error: WireError | null,
  finalAnswer: string,
  finalTrace: string,
  notify = false,
): void {
  d.meta.status = status;
  d.meta.error = error;
  if (error) d.events.push({ type: "error", code: error.code, message: error.message, component: error.component });
  d.events.push({ type: "complete", status, ...completeTexts(d.meta.session_id, finalAnswer, finalTrace) });
  const outstanding = d.meta.awaiting;
  for (const a of outstanding) d.clear.push(timerMember.task(a.task_id));
  d.meta.awaiting = [];
  if (d.meta.pause !== null) {
    if (d.meta.pause.expires_at !== null) disarmSession(d);
    d.meta.paused_ms += Math.max(0, d.ctx.now - d.meta.pause.since);
    d.meta.pause = null;
  } else if (d.meta.deadline_at !== null) {
    disarmSession(d);
  }
  if (notify || outstanding.length > 0) {
    d.cancel = { v: SCHEMA_VERSION, session_id: d.meta.session_id, reason: (error?.message ?? status).slice(0, 500) };
  }
}

/** Ends the session on the runtime's authority; the workflow still writes its final fields. */
export function endByRuntime(d: Draft, status: SessionStatus, error: WireError, notify = false): void {
  const aborted = d.def.abort(d.data, error);
  d.data = aborted.data;
  end(d, status, error, aborted.final_answer, aborted.final_reasoning_trace, notify);
  d.commands.push(status === "cancelled" ? "cancel" : `${status} ${error.code}`);
}

/** The first budget a dispatch of `n` tasks would break, with a message naming it; null when none. */
export function budgetBreach(meta: SessionMeta, n: number, now: number): { budget: string; message: string } | null {
  const { budgets: b, usage: u } = meta;
  if (b.max_steps !== null && u.steps + n > b.max_steps) {
    return {
      budget: "max_steps",
      message: `step budget exhausted: ${u.steps} of max_steps ${b.max_steps} used, ${n} more needed`,
    };
  }
  const tokens = u.prompt_tokens + u.completion_tokens;
  if (b.max_tokens !== null && tokens >= b.max_tokens) {
    return {
      budget: "max_tokens",
      message: `token budget exhausted: ${tokens} tokens used, max_tokens ${b.max_tokens}`,
    };
  }
  if (b.max_cost_usd !== null && u.cost_usd >= b.max_cost_usd) {
    return {
      budget: "max_cost_usd",
      message: `cost budget exhausted: ${u.cost_usd} USD spent, max_cost_usd ${b.max_cost_usd}`,
    };
  }
  const elapsed = activeElapsed(meta, now);
  if (b.max_wall_ms !== null && elapsed >= b.max_wall_ms) {
    return {
      budget: "max_wall_ms",
      message: `wall-clock budget exhausted: ${elapsed} ms elapsed, max_wall_ms ${b.max_wall_ms}`,
    };
  }
  return null;
}

/**
 * The UTF-8 bytes of `value` as JSON when they could pass `limit`, else a bound that is at most
 * `limit`. A UTF-16 code unit takes at most 3 bytes of UTF-8, so JSON with at most a third of the
 * limit in code units cannot pass it and is not encoded: the checks of every state and task on
 * each transition then cost a `JSON.stringify`, not a copy to UTF-8 as well (~3% of a coordinator).
 * Past that, the count is exact, so a refusal names the real size.
 */
export function jsonBytesFor(value: unknown, limit: number): number {
  const json = JSON.stringify(value);
  return json.length * 3 <= limit ? json.length * 3 : new TextEncoder().encode(json).length;
}

/**
 * A delay less up to a tenth of it, the fraction taken from the task id (FNV-1a): retries of
 * different tasks spread out, and a replayed step computes the same time.
 */
function jittered(delayMs: number, id: string): number {
  return Math.round(delayMs - (fnv1a(id) / 0x1_0000_0000) * (delayMs / 10));
}

/** An executor task that runs a tool or code: each counts one of the session's tool calls. */
const usesTool = (spec: TaskSpec): boolean => spec.role === "executor" && spec.op !== "list_tools";

/** Builds and checks every envelope first, so a bad spec publishes nothing at all. */
function envelopes(
  d: Draft,
  specs: readonly TaskSpec[],
): Array<{ readonly spec: TaskSpec; readonly envelope: TaskEnvelope }> | WireError {
  const { now, defaults } = d.ctx;
  const out: Array<{ readonly spec: TaskSpec; readonly envelope: TaskEnvelope }> = [];
  let toolCalls = d.meta.usage.tool_calls ?? 0;
  const maxToolCalls = d.meta.max_tool_calls ?? LIMITS.defaultMaxToolCallsPerSession;
  for (const [i, spec] of specs.entries()) {
    const def = findOp(spec.role, spec.op);
    if (!def)
      return new AgentmeshError("internal", `${d.def.name} dispatched unknown op ${spec.role}.${spec.op}`, {
        component: d.def.name,
      }).toWire();
    const parsed = compiled(def.request).safeParse(spec.input);
    if (!parsed.success) {
      const why = `${d.def.name} built an invalid ${spec.role}.${spec.op} request: ${formatZodError(parsed.error)}`;
      return new AgentmeshError("internal", why, { component: d.def.name }).toWire();
    }
    const ms =
      spec.deadlineMs === undefined
        ? defaults.taskDeadlineMs
        : Math.min(spec.deadlineMs, defaults.taskDeadlineMs ?? spec.deadlineMs);
    const id = taskId(d.meta.session_id, newVersion(d), i, spec.attempt, d.madeBy);
    const delay =
      spec.delayMs === undefined || spec.delayMs <= 0
        ? 0
        : jittered(spec.delayMs, taskId(d.meta.session_id, newVersion(d), i, spec.attempt));
    const envelope: TaskEnvelope = {
      v: SCHEMA_VERSION,
      task_id: id,
      session_id: d.meta.session_id,
      role: spec.role,
      op: spec.op,
      attempt: spec.attempt,
      deadline_at: ms === null ? null : now + delay + ms,
      ...(delay > 0 ? { not_before: now + delay } : {}),
      ...(usesTool(spec) ? { allowance: { tool_calls: Math.max(0, maxToolCalls - toolCalls++) } } : {}),
      input: parsed.data,
    };
    // Refused here rather than by the broker after the CAS, where it would block the outbox forever.
    const size = jsonBytesFor(envelope, LIMITS.maxMessageBytes);
    if (size > LIMITS.maxMessageBytes) {
      return new AgentmeshError(
        "payload_too_large",
        `${spec.role}.${spec.op} task is ${size} bytes, over ${LIMITS.maxMessageBytes}`,
        { component: d.def.name },
      ).toWire();
    }
    out.push({ spec, envelope });
  }
  return out;
}

/** Stops awaiting every outstanding task: its timer goes, and a late result is dropped as not awaited. */
function abandonOutstanding(d: Draft): void {
  for (const a of d.meta.awaiting) {
    d.clear.push(timerMember.task(a.task_id));
    d.commands.push(`abandon ${a.task_id}`);
  }
  d.meta.awaiting = [];
}

function dispatch(d: Draft, specs: readonly TaskSpec[], abandon: boolean): void {
  const breach = budgetBreach(d.meta, specs.length, d.ctx.now);
  if (breach) return endByRuntime(d, "budget_exceeded", new AgentmeshError("budget_exceeded", breach.message).toWire());
  // Backstop for a session timer that was lost or retired: no new work after the deadline.
  if (d.meta.deadline_at !== null && d.ctx.now >= d.meta.deadline_at) {
    return endByRuntime(
      d,
      "failed",
      new AgentmeshError("deadline_exceeded", `the session passed its deadline (${d.meta.deadline_at})`).toWire(),
      true,
    );
  }
  if (abandon) abandonOutstanding(d);
  if (specs.length === 0 && d.meta.awaiting.length === 0) {
    // Waiting for nothing would strand the session: no result and no timer could ever wake it.
    return endByRuntime(
      d,
      "failed",
      new AgentmeshError("internal", `${d.def.name} dispatched nothing while awaiting nothing`, {
        component: d.def.name,
      }).toWire(),
    );
  }
  const built = envelopes(d, specs);
  if (!Array.isArray(built)) return endByRuntime(d, "failed", built);
  for (const { spec, envelope: task } of built) {
    d.tasks.push(task);
    d.meta.awaiting.push({
      task_id: task.task_id,
      role: task.role,
      op: task.op,
      attempt: task.attempt,
      ...(spec.tag === undefined ? {} : { tag: spec.tag }),
      dispatched_at: d.ctx.now,
      deadline_at: task.deadline_at,
    });
    if (task.deadline_at !== null) d.timers.push({ member: timerMember.task(task.task_id), dueAt: task.deadline_at });
    d.events.push(stage(spec.stage, "running", spec.description));
    if (spec.toolCall) {
      const flags = scanDangerous(spec.toolCall.args);
      d.events.push({
        type: "tool_call",
        id: spec.toolCall.id,
        task_id: task.task_id,
        tool: spec.toolCall.tool,
        // what clients see: secrets by name and URL credentials hidden (the task keeps them)
        ...boundedArgs(redactArgs(spec.toolCall.args)),
        ...(flags.length > 0 ? { flags } : {}),
      });
    }
    d.commands.push(`dispatch ${task.role}.${task.op} ${task.task_id}`);
    if (task.allowance !== undefined) d.meta.usage.tool_calls = (d.meta.usage.tool_calls ?? 0) + 1;
  }
  d.meta.usage.steps += built.length;
  d.meta.status = "running";
}

/** Carries out the workflow's Control. */
export function applyControl(d: Draft, control: Control): void {
  switch (control.kind) {
    case "dispatch":
      return dispatch(d, control.tasks, control.abandon ?? false);
    case "await_user":
      return pause(d, control.question);
    case "complete":
      end(d, "completed", null, control.final_answer, control.final_reasoning_trace);
      d.commands.push("complete");
      return;
    case "fail":
      end(d, "failed", control.error, control.final_answer, control.final_reasoning_trace);
      d.commands.push(`fail ${control.error.code}`);
      return;
  }
}

/** Finishes the transition: new version, stamped events, outbox (tasks, events, cancel), timers. */
export function seal(d: Draft): StepOutcome {
  const version = newVersion(d);
  const { now } = d.ctx;
  const sid = d.meta.session_id;
  const meta: SessionMeta = { ...d.meta, version, updated_at: now };
  const events = d.events.map((e, index): SessionEvent => ({
    ...e,
    v: SCHEMA_VERSION,
    session_id: sid,
    version,
    index,
    timestamp: now,
  }));
  const outbox: OutboxEntry[] = [
    ...d.tasks.map((task): OutboxEntry => ({ kind: "task", task })),
    ...events.map((event): OutboxEntry => ({ kind: "event", event })),
    ...(d.cancel ? [{ kind: "cancel", notice: d.cancel } as const] : []),
  ];
  const terminal = isTerminal(meta.status);
  const timers = [...d.timers];
  // The session deadline is armed once, with the transition that leaves version 0.
  if (d.prev.meta.version === 0 && !terminal && meta.deadline_at !== null)
    timers.push({ member: timerMember.session(sid), dueAt: meta.deadline_at });
  return {
    kind: "apply",
    state: { meta, data: d.data },
    outbox,
    commands: d.commands,
    timers,
    clearTimers: [...new Set(d.clear)],
    ...(d.span === null ? {} : { spanAttributes: d.span }),
  };
}
