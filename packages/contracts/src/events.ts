import { z } from "zod";
import { LIMITS, SCHEMA_VERSION } from "./limits.js";
import { SessionId } from "./ids.js";
import { ErrorCode } from "./errors.js";
import { Provenance } from "./provenance.js";
import { ToolFlags } from "./tool-flags.js";
import { SessionStatus } from "./state.js";
import { HaloCitation } from "./halo.js";
import { SupervisorAgent } from "./workflows.js";
import { OrchestratorDecision } from "./clarify.js";
import {
  CodeLanguage,
  HANDOFF_OUTSIDE_MATRIX,
  HandoffInfo,
  HandoffRefusedReason,
  inHandoffMatrix,
  LOW_ROUTING_CONFIDENCE,
  RoutingDecision,
  VegaLiteSpec,
} from "./supervisor.js";

const Base = {
  v: z.literal(SCHEMA_VERSION),
  session_id: SessionId,
  /** Session version of the transition that emitted it; with `index` it names the event. */
  version: z.number().int().nonnegative(),
  index: z.number().int().nonnegative(),
  /** When the transition (or, for a token, the delta) was made: epoch milliseconds. */
  timestamp: z.number().int().nonnegative(),
};

const jsonLength = (v: unknown) => JSON.stringify(v).length;
const JsonObject = z.record(z.string(), z.unknown());
/** A tool call's id, unique within its session: it ties a `tool_result` (and a `code_result`) to its `tool_call`. */
const CallId = z.string().min(1).max(200);
const Tool = z.string().min(1).max(80);

/** A stage runs, then completes or fails: three values. */
export const StageStatus = z.enum(["running", "completed", "failed"]);
export type StageStatus = z.infer<typeof StageStatus>;

/** The longest `delta` a token message carries; a longer streamed piece goes out as several. */
export const MAX_TOKEN_DELTA_CHARS = 4000;

/** Lifecycle events on `<p>.events.<sid>` and token deltas on `<p>.tokens.<sid>.<role>`, both stored in the events stream (replayable). */
export const SessionEvent = z.discriminatedUnion("type", [
  z.object({
    ...Base,
    type: z.literal("stage"),
    name: z.string().min(1).max(40),
    description: z.string().max(2000),
    status: StageStatus,
  }),
  z.object({
    ...Base,
    type: z.literal("step"),
    task_id: z.string(),
    summary: z.string().max(2000),
    provenance: Provenance,
  }),
  z.object({
    ...Base,
    type: z.literal("token"),
    task_id: z.string(),
    delta: z.string().max(MAX_TOKEN_DELTA_CHARS),
    /** The role and op whose model call streams it, so a client can keep only the answering node's text (see ANSWER_OPS). */
    role: z.string().max(40).optional(),
    op: z.string().max(40).optional(),
    /** The task's attempt (as in its id). */
    attempt: z.number().int().nonnegative().optional(),
    /**
     * The delta's place in its task's text, from 0. A redelivered task streams again from 0, so a
     * client shows a delta only when its seq is past the last one it showed for that task_id
     * (messaging's `createTokenDedup`). Absent from older publishers: such a delta is always shown.
     */
    seq: z.number().int().nonnegative().optional(),
    /**
     * Where the delta's text starts in its task's streamed text (UTF-16 units, from 0). Deltas are
     * coalesced by time, so a redelivered task cuts its text elsewhere: a client keeps the part of
     * a delta past the text it already has for that task_id (messaging's `createTokenDedup`).
     * Absent from older publishers, which are de-duplicated by `seq`.
     */
    offset: z.number().int().nonnegative().optional(),
  }),
  z.object({
    ...Base,
    type: z.literal("tool_call"),
    id: CallId,
    /** The task that carries the call out (its `step` event names the same task). */
    task_id: z.string().max(200),
    tool: Tool,
    /** The arguments as the workflow dispatched them, at most `LIMITS.maxToolArgsChars` of JSON. */
    args: JsonObject.refine(
      (a) => jsonLength(a) <= LIMITS.maxToolArgsChars,
      `the arguments are over ${LIMITS.maxToolArgsChars} characters of JSON`,
    ),
    /** True when `args` was cut to fit. */
    args_truncated: z.boolean(),
    /** The dangerous patterns seen in the arguments (recorded, never enforced); absent when none. */
    flags: ToolFlags.min(1).optional(),
  }),
  z.object({
    ...Base,
    type: z.literal("tool_result"),
    id: CallId,
    tool: Tool,
    ok: z.boolean(),
    /** The output (or the failure) as text, cut to a preview. */
    content: z.string().max(LIMITS.toolResultPreviewChars),
    latency_ms: z.number().nonnegative(),
    /** The dangerous patterns the executor saw in the arguments it ran with; absent when none. */
    flags: ToolFlags.min(1).optional(),
  }),
  z.object({
    ...Base,
    type: z.literal("error"),
    code: ErrorCode,
    message: z.string().max(4000),
    component: z.string().max(100).nullable(),
  }),
  z
    .object({
      ...Base,
      type: z.literal("complete"),
      status: SessionStatus,
      final_answer: z.string(),
      final_reasoning_trace: z.string(),
      /** True when the answer or the trace was cut to keep the event under `LIMITS.maxCompleteEventBytes`. */
      truncated: z.boolean().optional(),
      /** Where the whole text is, when `truncated`. */
      full_text_at: z.string().max(300).optional(),
    })
    .refine(
      (e) => jsonLength(e) <= LIMITS.maxCompleteEventBytes,
      `a complete event is over ${LIMITS.maxCompleteEventBytes} characters of JSON`,
    ),
  z
    .object({ ...Base, type: z.literal("routing"), ...RoutingDecision.shape })
    .refine((e) => e.is_low_confidence === e.confidence < LOW_ROUTING_CONFIDENCE, {
      message: `is_low_confidence means a confidence under ${LOW_ROUTING_CONFIDENCE}`,
      path: ["is_low_confidence"],
    }),
  /** One run of clarify's orchestrator: which layer decided, where it routes, the count against its cap. */
  z.object({ ...Base, type: z.literal("orchestration"), ...OrchestratorDecision.shape }),
  z.object({
    ...Base,
    type: z.literal("config"),
    /** The agent whose settings these are (`init_config`: the agent announces how it will run). */
    agent: SupervisorAgent,
    /** Its settings as the session runs them, e.g. research's depth, scenario, search rounds and sources kept. */
    settings: z
      .record(z.string().max(40), z.union([z.string().max(200), z.number(), z.boolean(), z.null()]))
      .refine((s) => Object.keys(s).length <= 20, "at most 20 settings"),
  }),
  z
    .object({ ...Base, type: z.literal("handoff"), ...HandoffInfo.shape })
    .refine(inHandoffMatrix, HANDOFF_OUTSIDE_MATRIX),
  /** A handoff the supervisor refused (the agent is told, and goes on with the task itself). */
  z.object({
    ...Base,
    type: z.literal("handoff_refused"),
    /** The agent that asked to hand off, and the one it named. */
    from: SupervisorAgent,
    to: SupervisorAgent,
    reason: HandoffRefusedReason,
  }),
  z
    .object({
      ...Base,
      type: z.literal("source"),
      // A halo citation's fields, so each merged citation is announced as one source.
      ...HaloCitation.shape,
    })
    .refine((e) => e.url !== null || e.path !== null, { message: "a source needs a url or a path", path: ["url"] }),
  z.object({
    ...Base,
    type: z.literal("code_result"),
    /** The `tool_call` that ran the code. */
    id: CallId,
    language: CodeLanguage,
    /** 0 when the code ran to its end, 1 when it raised; null when a limit stopped it. */
    exit_code: z.number().int().nullable(),
    stdout: z.string().max(LIMITS.maxCodeOutputChars),
    stderr: z.string().max(LIMITS.maxCodeOutputChars),
    /** The value of the last expression, as text; null if none. */
    result: z.string().max(2000).nullable(),
    /** True when stdout, stderr or the result was cut (by the sandbox or to fit this event). */
    truncated: z.boolean(),
    duration_ms: z.number().nonnegative(),
  }),
  z.object({
    ...Base,
    type: z.literal("visualization"),
    /** A Vega-Lite spec (data inline), at most `LIMITS.maxVisualizationSpecChars` of JSON. */
    spec: VegaLiteSpec,
  }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
export type SessionEventType = SessionEvent["type"];

/** An event before the runtime stamps its identity (what a workflow's step() emits). */
export type EventDraft = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, "v" | "session_id" | "version" | "index" | "timestamp">
    : never
  : never;

/**
 * The ops whose streamed model text is the session's final answer verbatim (streaming
 * configuration: the answering node), as `role.op`. An OpenAI-compatible stream passes on only
 * their token deltas. The supervisor's answering nodes: chat's `agent` (chat.respond), research's
 * and writing's `finalize`, data's `summarize`; the workflow makes their text the final answer
 * unchanged. critic-chain's finalizer and blackboard's critic answer in structured JSON, so they
 * are not here; nor is an op that streams text the workflow then rewrites (the code agent's answer
 * is composed by the workflow), since the gateway would send text that is not the answer.
 */
export const ANSWER_OPS: ReadonlySet<string> = new Set<string>([
  "chat.respond",
  "researcher.finalize",
  "writer.finalize",
  "analyst.summarize",
]);

/**
 * What one message on `<p>.events.<sid>` carries: the events of one transition of one session, in
 * index order. A transition's events go out as one message (more only when they would not fit in
 * `LIMITS.maxMessageBytes`), so a step costs one events publish however many events it emits.
 * Readers also accept a message holding one bare `SessionEvent`, as written before this existed.
 * Readers check the wrapper with `EventBatchEnvelope` and each event on its own, so one event they
 * cannot read (a newer type) costs them that event, not the transition's others.
 */
export const EventBatch = z
  .object({
    v: z.literal(SCHEMA_VERSION),
    session_id: SessionId,
    version: z.number().int().nonnegative(),
    events: z.array(SessionEvent).min(1).max(256),
  })
  .superRefine((b, ctx) => {
    let last = -1;
    for (const [i, e] of b.events.entries()) {
      if (e.session_id !== b.session_id || e.version !== b.version) {
        ctx.addIssue({
          code: "custom",
          path: ["events", i],
          message: `event ${e.session_id} v${e.version} in a batch of ${b.session_id} v${b.version}`,
        });
      } else if (e.index <= last) {
        ctx.addIssue({
          code: "custom",
          path: ["events", i],
          message: `event index ${e.index} after ${last}: a batch is in index order`,
        });
      }
      last = e.index;
    }
  });
export type EventBatch = z.infer<typeof EventBatch>;

/** What a reader checks of a batch before it checks each event on its own. */
export const EventBatchEnvelope = z.object({
  v: z.literal(SCHEMA_VERSION),
  session_id: SessionId,
  version: z.number().int().nonnegative(),
  events: z.array(z.unknown()).min(1).max(256),
});
