import {
  LIMITS,
  SessionId,
  parseOpOutput,
  isTerminal,
  AgentmeshError,
  type AwaitedTask,
  type Budgets,
  type ChatMessage,
  type InboxInput,
  type Provenance,
  type SessionOptions,
  type SessionState,
  type ThreadCarry,
  type SessionTrace,
  type WireError,
} from "@agentmesh/contracts";
import { getWorkflow } from "./registry.js";
import {
  activeElapsed,
  applyControl,
  consume,
  end,
  endByRuntime,
  jsonBytesFor,
  openDraft,
  resume,
  seal,
  type Draft,
} from "./transition.js";
import type { DropReason, RuntimeDefaults, StepContext, StepOutcome, WorkflowInput } from "./types.js";

/** What a new session is made from. */
export interface CreateSessionArgs {
  readonly sessionId: string;
  readonly workflow: string;
  readonly query: string;
  readonly options: SessionOptions;
  readonly now: number;
  readonly defaults: RuntimeDefaults;
  /** The API key name that owns it (null: none). */
  readonly owner?: string | null;
  /** Its thread (null: none). */
  readonly threadId?: string | null;
  /** The conversation's earlier turns, already bounded. */
  readonly messages?: readonly ChatMessage[];
  /** What the thread's latest session handed on (clarify's count). */
  readonly carry?: ThreadCarry;
  /** Its trace context, minted by the coordinator (null: none). */
  readonly trace?: SessionTrace | null;
}

/** The session at version 0, before its `start` input is applied. Throws on an unknown workflow (a caller bug). */
export function createSession(args: CreateSessionArgs): SessionState {
  const def = getWorkflow(args.workflow);
  if (!def) throw new Error(`unknown workflow "${args.workflow}"`);
  const budgets = effectiveBudgets(args.options.budgets ?? {}, args.defaults);
  const pick = <K extends keyof Budgets>(k: K): Budgets[K] => budgets[k];
  const { now } = args;
  const maxWall = pick("max_wall_ms");
  // The session timer fires at whichever comes first: the deadline or the wall-clock budget.
  const limits = [args.defaults.sessionDeadlineMs, maxWall].filter((x): x is number => x !== null && x !== undefined);
  return {
    meta: {
      session_id: SessionId.parse(args.sessionId),
      version: 0,
      workflow: def.name,
      workflow_version: def.version,
      status: "running",
      awaiting: [],
      usage: { steps: 0, model_calls: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, tool_calls: 0 },
      budgets: {
        max_steps: pick("max_steps"),
        max_tokens: pick("max_tokens"),
        max_cost_usd: pick("max_cost_usd"),
        max_wall_ms: pick("max_wall_ms"),
      },
      max_tool_calls: args.defaults.maxToolCallsPerSession ?? LIMITS.defaultMaxToolCallsPerSession,
      created_at: now,
      updated_at: now,
      deadline_at: limits.length ? now + Math.min(...limits) : null,
      error: null,
      paused_ms: 0,
      pause: null,
      owner: args.owner ?? null,
      thread_id: args.threadId ?? null,
      trace: args.trace ?? null,
    },
    data: def.init(args.query, args.options, args.messages ?? [], args.defaults, args.carry, args.owner ?? null),
  };
}

/**
 * A session's budgets: what the client asked for (an absent key takes the server default), never
 * above the server's ceiling; an explicit null ("no limit") and a null default get the ceiling.
 */
export function effectiveBudgets(
  requested: Partial<Budgets>,
  defaults: Pick<RuntimeDefaults, "budgets" | "ceilings">,
): Budgets {
  const one = (k: keyof Budgets): number | null => {
    const wanted = requested[k] === undefined ? defaults.budgets[k] : requested[k];
    const ceiling = defaults.ceilings[k];
    if (wanted === null || wanted === undefined) return ceiling;
    return ceiling === null ? wanted : Math.min(wanted, ceiling);
  };
  return {
    max_steps: one("max_steps"),
    max_tokens: one("max_tokens"),
    max_cost_usd: one("max_cost_usd"),
    max_wall_ms: one("max_wall_ms"),
  };
}

const drop = (reason: DropReason, detail: string): StepOutcome => ({ kind: "drop", reason, detail });

/** What the workflow learns of the awaited task an input answers. */
function taskRef(task: AwaitedTask, now: number) {
  return {
    attempt: task.attempt,
    ...(task.tag === undefined ? {} : { tag: task.tag }),
    elapsed_ms: Math.max(0, now - task.dispatched_at),
  };
}

/** Spend counts every attempt, failed ones included (the money is gone either way). */
function addSpend(d: Draft, p: Provenance | null): void {
  if (!p) return;
  const u = d.meta.usage;
  u.model_calls += p.usage.model_calls;
  u.prompt_tokens += p.usage.prompt_tokens;
  u.completion_tokens += p.usage.completion_tokens;
  u.cost_usd += p.usage.cost_usd;
}

/** Turns an agent's outcome into what the workflow sees; bad output is the agent's retryable fault. */
function resultInput(task: AwaitedTask, input: Extract<InboxInput, { kind: "result" }>, now: number): WorkflowInput {
  const base = taskRef(task, now);
  const invalid = (message: string): WorkflowInput => ({
    kind: "failure",
    ...base,
    role: task.role,
    op: task.op,
    error: new AgentmeshError("invalid_message", message, { component: task.role, retryable: true }).toWire(),
  });
  if (input.op !== task.op) {
    return invalid(`result for ${task.task_id} claims ${input.role}.${input.op}, the task is ${task.role}.${task.op}`);
  }
  const { outcome } = input;
  // A task past its deadline is one fault whoever notices first, the agent or the deadline timer
  // (see "timer" below): not retryable by the agent, but the workflow may run the step again.
  if (!outcome.ok)
    return {
      kind: "failure",
      ...base,
      role: task.role,
      op: task.op,
      error: outcome.error.code === "deadline_exceeded" ? { ...outcome.error, retryable: true } : outcome.error,
    };
  // The one place an agent's output is checked: the workflow trusts it from here on.
  const parsed = parseOpOutput(task.role, task.op, outcome.output);
  if (!parsed.ok) return invalid(parsed.why);
  return { kind: "result", ...base, ...parsed.result };
}

/** Hands the input to the workflow and applies what it decided. */
function decideAndApply(d: Draft, input: WorkflowInput): StepOutcome {
  const decided = d.def.decide(d.data, input);
  d.data = decided.data;
  d.events.push(...decided.events);
  if (decided.span !== undefined) d.span = { ...d.span, ...decided.span };
  applyControl(d, decided.control);
  return seal(d);
}

/** A state's UTF-8 bytes as stored (JSON) when they could pass LIMITS.maxStateBytes (see jsonBytesFor). */
const stateBytes = (s: SessionState) => jsonBytesFor(s, LIMITS.maxStateBytes);

/**
 * The single entry point the coordinator calls: applies one inbox input to a session, or says
 * why it drops it. Pure: the same state, input and context give the same outcome.
 * A transition whose state would pass `LIMITS.maxStateBytes` is replaced by one that fails the
 * session with `payload_too_large`, built from the state before it, so the store never has to
 * refuse a write (which would make the input a poison message).
 */
export function step(state: SessionState, input: InboxInput, ctx: StepContext): StepOutcome {
  const out = stepUnbounded(state, input, ctx);
  if (out.kind !== "apply") return out;
  const bytes = stateBytes(out.state);
  if (bytes <= LIMITS.maxStateBytes) return out;
  const error = new AgentmeshError(
    "payload_too_large",
    `the session's state would grow to ${bytes} bytes, over the ${LIMITS.maxStateBytes}-byte limit (input ${input.input_id})`,
    {
      component: state.meta.workflow,
    },
  ).toWire();
  const def = getWorkflow(state.meta.workflow);
  if (!def) return out;
  const failed = openDraft(state, def, ctx, input.input_id);
  endByRuntime(failed, "failed", error, true);
  const sealed = seal(failed);
  if (sealed.kind === "apply" && stateBytes(sealed.state) <= LIMITS.maxStateBytes) return sealed;
  // The workflow's own final fields did not fit either: end with its data as it was.
  const bare = openDraft(state, def, ctx, input.input_id);
  end(bare, "failed", error, "", "", true);
  bare.commands.push(`failed ${error.code}`);
  return seal(bare);
}

/** An agent's outcome for an awaited task: its spend counted, a `step` event, then the workflow decides. */
function onAgentResult(d: Draft, input: Extract<InboxInput, { kind: "result" }>): StepOutcome {
  const { meta } = d.prev;
  const task = meta.awaiting.find((a) => a.task_id === input.task_id);
  if (!task) return drop("not_awaited", `task ${input.task_id} is not awaited`);
  // Only the role the task went to may answer it (its inbox subject proves the role): a result
  // claiming another role is someone else's message and must not consume the task.
  if (input.role !== task.role)
    return drop("wrong_sender", `task ${input.task_id} went to ${task.role}, the result is from ${input.role}`);
  consume(d, task);
  const { provenance } = input.outcome;
  addSpend(d, provenance);
  if (provenance) {
    const summary = `${task.role}.${task.op} attempt ${task.attempt}: ${input.outcome.ok ? "ok" : `failed (${input.outcome.error.code})`}`;
    d.events.push({ type: "step", task_id: task.task_id, summary, provenance });
  }
  return decideAndApply(d, resultInput(task, input, d.ctx.now));
}

/**
 * The session's own deadline: a question nobody answered in time, the wall-clock budget spent, or
 * the deadline passed; a stale timer (armed before a pause moved the deadline) is dropped.
 */
function onSessionDeadline(d: Draft): StepOutcome {
  const { meta } = d.prev;
  if (meta.pause !== null) {
    const expires = meta.pause.expires_at;
    if (expires === null || d.ctx.now < expires)
      return drop("not_applicable", "the session is waiting for a person: its wall clock is stopped");
    const waited = d.ctx.now - meta.pause.since;
    endByRuntime(
      d,
      "failed",
      new AgentmeshError(
        "deadline_exceeded",
        `the session expired: nobody answered its question within ${waited} ms`,
      ).toWire(),
      true,
    );
    return seal(d);
  }
  if (meta.deadline_at === null) return drop("not_applicable", "the session has no deadline");
  // A timer armed before a pause moved the deadline later; the re-armed one will fire instead.
  if (meta.paused_ms > 0 && d.ctx.now < meta.deadline_at) {
    return drop(
      "not_applicable",
      `stale session timer: the deadline moved to ${meta.deadline_at} while the session waited for a person`,
    );
  }
  const wall = meta.budgets.max_wall_ms;
  const elapsed = activeElapsed(meta, d.ctx.now);
  if (wall !== null && elapsed >= wall) {
    endByRuntime(
      d,
      "budget_exceeded",
      new AgentmeshError(
        "budget_exceeded",
        `wall-clock budget exhausted: ${elapsed} ms elapsed, max_wall_ms ${wall}`,
      ).toWire(),
      true,
    );
  } else {
    endByRuntime(
      d,
      "failed",
      new AgentmeshError("deadline_exceeded", `the session passed its deadline (${meta.deadline_at})`).toWire(),
      true,
    );
  }
  return seal(d);
}

/** An awaited task passed its deadline: the workflow sees it as the task's retryable failure. */
function onTaskDeadline(d: Draft, input: Extract<InboxInput, { kind: "timer" }>): StepOutcome {
  if (input.task_id === null) return drop("invalid", "a task deadline that names no task");
  const task = d.prev.meta.awaiting.find((a) => a.task_id === input.task_id);
  if (!task) return drop("not_awaited", `task ${input.task_id} is not awaited`);
  consume(d, task);
  // Not retryable for the agent, but the workflow may run the step again as a new attempt.
  const error: WireError = new AgentmeshError("deadline_exceeded", `task ${task.task_id} passed its deadline`, {
    component: task.role,
    retryable: true,
  }).toWire();
  return decideAndApply(d, { kind: "failure", ...taskRef(task, d.ctx.now), role: task.role, op: task.op, error });
}

function stepUnbounded(state: SessionState, input: InboxInput, ctx: StepContext): StepOutcome {
  const { meta } = state;
  if (input.session_id !== meta.session_id)
    return drop("wrong_session", `input for ${input.session_id} reached ${meta.session_id}`);
  if (isTerminal(meta.status)) return drop("terminal", `session is ${meta.status}`);
  const def = getWorkflow(meta.workflow);
  if (!def || def.name !== state.data.workflow)
    return drop("invalid", `no workflow "${meta.workflow}" for data of "${state.data.workflow}"`);
  const d = openDraft(state, def, ctx, input.input_id);
  switch (input.kind) {
    case "start":
      if (meta.version !== 0) return drop("not_applicable", `session already started (version ${meta.version})`);
      if (input.workflow !== meta.workflow)
        return drop("invalid", `start names ${input.workflow}, session runs ${meta.workflow}`);
      return decideAndApply(d, { kind: "start" });
    case "cancel":
      endByRuntime(
        d,
        "cancelled",
        new AgentmeshError("cancelled", input.reason || "cancelled on request").toWire(),
        true,
      );
      return seal(d);
    case "result":
      return onAgentResult(d, input);
    case "timer":
      return input.reason === "session_deadline" ? onSessionDeadline(d) : onTaskDeadline(d, input);
    case "user_reply":
      if (meta.status !== "awaiting_user")
        return drop("not_applicable", `session is ${meta.status}, not awaiting_user`);
      resume(d);
      return decideAndApply(d, { kind: "user_reply", text: input.text });
  }
}

/** Re-applies logged inputs through step(); dropped inputs leave the state as it was. */
export function replay(
  initial: SessionState,
  inputs: ReadonlyArray<{ readonly input: InboxInput; readonly now: number }>,
  defaults: RuntimeDefaults,
): SessionState {
  let state = initial;
  for (const { input, now } of inputs) {
    const outcome = step(state, input, { now, defaults });
    if (outcome.kind === "apply") state = outcome.state;
  }
  return state;
}
