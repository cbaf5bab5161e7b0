import type { ToolCallSpec } from "./events.js";
import type {
  ChatMessage,
  ClarifySettings,
  CriticChainSettings,
  EventDraft,
  HaloSettings,
  ThreadCarry,
  SupervisorSettings,
  InboxInput,
  OutboxEntry,
  SessionData,
  SessionOptions,
  SessionState,
  WireError,
  Budgets,
  OpInput,
  OpName,
  OpResult,
  RoleName,
} from "@agentmesh/contracts";

/** What a task carries besides its op and input; the runtime mints its id and deadline. */
export interface TaskFields {
  /** Attempt number of this logical step (0 first; re-dispatch after a failure or timeout +1). */
  readonly attempt: number;
  /**
   * The workflow's own name for the step (e.g. critic-chain's "critic_planner"). The runtime, not
   * the workflow, emits the `stage running` event, so a task that a budget or a bad input stops
   * is never announced as running.
   */
  readonly stage: string;
  /** One line for that `stage running` event. */
  readonly description: string;
  /** The tool call this task carries out: announced by the runtime as a `tool_call` event, with the task's id, when the task is really dispatched. */
  readonly toolCall?: ToolCallSpec;
  /** The workflow's own label, kept with the awaited task and handed back with its result (e.g. a fan-out's strategy). */
  readonly tag?: string;
  /** The task's own deadline (ms after dispatch), when shorter than the runtime default: a fan-out's join deadline. */
  readonly deadlineMs?: number;
  /**
   * A backed-off retry: no agent starts the task before this many ms after dispatch (the runtime
   * takes up to a tenth off, derived from the task id); its deadline counts from then.
   */
  readonly delayMs?: number;
}

/** A task of one op: its role, its name and an input of that op's request type. */
export type TaskOf<R extends RoleName, O extends OpName<R>> = TaskFields & {
  readonly role: R;
  readonly op: O;
  readonly input: OpInput<R, O>;
};

/** A task a workflow wants run, of any op of the registry (built with `task(OPS.<role>.<op>, input, fields)`). */
export type TaskSpec = { [R in RoleName]: { [O in OpName<R>]: TaskOf<R, O> }[OpName<R>] }[RoleName];

/**
 * Attributes a workflow puts on the coordinator's span of the transition it decided (a decision
 * record, e.g. clarify's `orchestrator_decision.*`): data, never a side effect; ignored when
 * tracing is off.
 */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** What a workflow decides after an input: control flow as data, never an exception. */
export type Control =
  | {
      readonly kind: "dispatch";
      /** Empty while other tasks are still awaited means "keep waiting". */
      readonly tasks: readonly TaskSpec[];
      /**
       * Stop awaiting every task still outstanding (a fan-out joined at its deadline): their
       * timers are cleared and a late result is dropped as not awaited.
       */
      readonly abandon?: boolean;
    }
  | { readonly kind: "await_user"; readonly question: string }
  | { readonly kind: "complete"; readonly final_answer: string; readonly final_reasoning_trace: string }
  | {
      readonly kind: "fail";
      readonly error: WireError;
      readonly final_answer: string;
      readonly final_reasoning_trace: string;
    };

/** What the runtime knows of the awaited task an input answers (besides its role and op). */
interface TaskRef {
  readonly attempt: number;
  /** The TaskSpec's tag, when it had one. */
  readonly tag?: string;
  /** Time from dispatch to this input (set by the runtime for every result, failure and deadline). */
  readonly elapsed_ms?: number;
}

/**
 * An awaited task's output, validated against its op's response schema where it entered the
 * coordinator and typed by that op: checking `role` and `op` (or `isResultOf`) narrows `output`.
 */
export type ResultInput = TaskRef & { readonly kind: "result" } & OpResult;

/** Inputs a workflow sees, after the runtime matched results to awaited tasks. */
export type WorkflowInput =
  | { readonly kind: "start" }
  | ResultInput
  | (TaskRef & { readonly kind: "failure"; readonly role: string; readonly op: string; readonly error: WireError })
  | { readonly kind: "user_reply"; readonly text: string };

/** What a workflow leaves behind when the runtime ends a session it did not choose to end. */
export interface Aborted<D> {
  readonly data: D;
  readonly final_answer: string;
  readonly final_reasoning_trace: string;
}

/** A workflow: pure, deterministic, no I/O, no clock, no randomness. */
export interface WorkflowDefinition<D extends SessionData = SessionData> {
  readonly name: D["workflow"];
  readonly version: number;
  /**
   * The session's data before its start; `messages` are the conversation's earlier turns (a
   * workflow that takes one question ignores them); `defaults` the deployment's settings a
   * workflow copies into its data (halo's capabilities), so later steps never read config;
   * `carry` what the thread's latest session handed on (clarify's count); `owner` who asked (the
   * session's owner, null without one), for a workflow that records it (the supervisor's `user_id`).
   */
  init(
    query: string,
    options: SessionOptions,
    messages?: readonly ChatMessage[],
    defaults?: RuntimeDefaults,
    carry?: ThreadCarry,
    owner?: string | null,
  ): D;
  decide(
    data: D,
    input: WorkflowInput,
  ): {
    readonly data: D;
    readonly control: Control;
    readonly events: readonly EventDraft[];
    readonly span?: SpanAttributes;
  };
  /**
   * Called when the runtime ends the session on its own authority (cancel, session deadline,
   * budget, an internal fault), so the workflow's data and the `complete` event still carry
   * final fields in the workflow's own terms.
   */
  abort(data: D, error: WireError): Aborted<D>;
}

/** Runtime defaults the coordinator passes in (from config), so step() stays pure. */
export interface RuntimeDefaults {
  /** Budgets of a session whose client set none (null = up to the ceiling). */
  readonly budgets: Budgets;
  /**
   * The server's ceilings, which no request can raise: a session's budget is
   * `min(requested ?? default, ceiling)`, and an explicit null gets the ceiling. A null ceiling
   * means none (tests); the coordinator's config always sets all four.
   */
  readonly ceilings: Budgets;
  /** Tool calls one session may make in all (executor tasks, each attempt counted); absent = 100. */
  readonly maxToolCallsPerSession?: number;
  /** Deadline of each awaited task (ms after dispatch); null = none. */
  readonly taskDeadlineMs: number | null;
  /** Wall-clock deadline of a session (ms after creation); null = none. */
  readonly sessionDeadlineMs: number | null;
  /**
   * How long a session waits for a person before it fails as expired (ms after it paused); null =
   * forever. Shorter than the stored keys' TTL, so the session ends with its events, not in silence.
   */
  readonly pauseTimeoutMs: number | null;
  /** halo: what this deployment serves and the specialists' join deadline; absent = chitchat only, 30 s (tests). */
  readonly halo?: HaloSettings;
  /** supervisor: the tools this deployment serves its agents; absent = the corpus and the sandbox (tests). */
  readonly supervisor?: SupervisorSettings;
  /** critic-chain: the tools this deployment serves its researcher and expert, and their rounds per turn; absent = the calculator, the corpus and the sandbox, 5 rounds (tests). */
  readonly criticChain?: CriticChainSettings;
  /** clarify: the clarification cap and the orchestrator's history; absent = 2 and 10. */
  readonly clarify?: ClarifySettings;
}

/** What step() needs besides the state and the input: the time and the runtime defaults. */
export interface StepContext {
  readonly now: number;
  readonly defaults: RuntimeDefaults;
}

/** A timer to arm in the durable timer set: `member` is `task:<taskId>` or `session:<sid>`. */
export interface TimerEntry {
  readonly member: string;
  readonly dueAt: number;
}

/** Why an input was not applied. */
export type DropReason = "not_awaited" | "terminal" | "wrong_session" | "not_applicable" | "invalid" | "wrong_sender";

/** The outcome of stepping a session with one input. */
export type StepOutcome =
  | {
      readonly kind: "apply";
      readonly state: SessionState;
      /** Tasks first, then events (stamped), then a cancel notice if any. */
      readonly outbox: readonly OutboxEntry[];
      /** Short command descriptions for the transition log (task ids, control kind). */
      readonly commands: readonly string[];
      /** Timer members to (re)arm and to clear, for durable deadlines. */
      readonly timers: readonly TimerEntry[];
      readonly clearTimers: readonly string[];
      /** What the workflow asked to record on the transition's span (see `SpanAttributes`). */
      readonly spanAttributes?: SpanAttributes;
    }
  | { readonly kind: "drop"; readonly reason: DropReason; readonly detail: string };

export type { InboxInput };
