import { z } from "zod";
import { LIMITS, SCHEMA_VERSION } from "./limits.js";
import { SessionId, ThreadId } from "./ids.js";
import { Owner } from "./subjects.js";
import { TaskId } from "./ids.js";
import { WireError } from "./errors.js";
import { Provenance, Tier } from "./provenance.js";
import { ResearchScenario, SupervisorAgent, WorkflowName } from "./workflows.js";
import { BLACKBOARD_LIMITS, LongTermRef, StrategyProfile } from "./blackboard.js";
import { Capability } from "./halo.js";
import { ImageAttachment, MAX_IMAGE_ATTACHMENTS, ModelProvider, ResearchDepth } from "./supervisor.js";

const V = z.literal(SCHEMA_VERSION);
const Ms = z.number().int().nonnegative();

/** Session budgets; null means no limit of the client's own (the server's ceiling still binds). Spend counts every attempt. */
export const Budgets = z.object({
  max_steps: z.number().int().positive().nullable(),
  max_tokens: z.number().int().positive().nullable(),
  max_cost_usd: z.number().positive().nullable(),
  max_wall_ms: z.number().int().positive().nullable(),
});
export type Budgets = z.infer<typeof Budgets>;

/** Control characters other than tab, newline and carriage return: not in a text attachment. */
const CONTROL_CHARS = /[^\P{Cc}\t\n\r]/u;

/** A file a client sends with its query, as text (no binary): CSV, JSON or plain text. */
export const Attachment = z
  .object({
    /** The file's name, without a folder. */
    name: z
      .string()
      .min(1)
      .max(200)
      .refine((n) => !/[/\\]/.test(n), "an attachment's name must not contain a path separator")
      .refine((n) => !CONTROL_CHARS.test(n), "an attachment's name must not contain control characters"),
    content_type: z.enum(["text/csv", "application/json", "text/plain"]),
    content: z
      .string()
      .max(LIMITS.maxAttachmentChars)
      .refine(
        (c) => !CONTROL_CHARS.test(c),
        "an attachment's content must be text (no control characters but tab and newline)",
      ),
  })
  .strict();
export type Attachment = z.infer<typeof Attachment>;

/** The bytes `content` takes at its largest on the bus: UTF-8, as a JSON string inside another (see `LIMITS.maxAttachmentBytes`). */
export const attachmentBytes = (content: string): number =>
  new TextEncoder().encode(JSON.stringify(JSON.stringify(content))).length;

/**
 * A session's attachments: at most `LIMITS.maxAttachments`, with at most `LIMITS.maxAttachmentChars`
 * characters and `LIMITS.maxAttachmentBytes` bytes (see `attachmentBytes`) of content in all.
 */
export const Attachments = z
  .array(Attachment)
  .max(LIMITS.maxAttachments)
  .refine((list) => list.reduce((n, a) => n + a.content.length, 0) <= LIMITS.maxAttachmentChars, {
    message: `the attachments' content is over ${LIMITS.maxAttachmentChars} characters in all`,
  })
  .refine((list) => list.reduce((n, a) => n + attachmentBytes(a.content), 0) <= LIMITS.maxAttachmentBytes, {
    message: `the attachments' content is over ${LIMITS.maxAttachmentBytes} bytes in all as sent (non-ASCII characters, quotes and backslashes count more than one)`,
  });

/**
 * Per-session options a client may set at submit. Those in `WORKFLOW_OPTIONS` belong to one
 * workflow: sent with another, the query is refused (`misplacedOption`).
 */
export const SessionOptions = z.object({
  /** critic-chain: rejections before the run ends (default 5). */
  retry_limit: z.number().int().min(1).max(20).optional(),
  budgets: Budgets.partial().optional(),
  /** blackboard: the strategy profile (default CONSERVATIVE). */
  strategy_profile: StrategyProfile.optional(),
  /** supervisor: the agent to use, bypassing the router (`mode`; not the workflow). */
  mode: SupervisorAgent.optional(),
  /** supervisor's research agent: how deep to research (`depth`). */
  depth: ResearchDepth.optional(),
  /** supervisor's research agent: the scenario (`scenario`). */
  scenario: ResearchScenario.optional(),
  /** supervisor: the model provider, model and tier the client names (the request's metadata); recorded in the session, while each agent runs its role's configured model. */
  provider: ModelProvider.optional(),
  model: z.string().min(1).max(200).optional(),
  tier: Tier.optional(),
  /** supervisor: images sent with the query (`image_attachments`), recorded as the request's metadata. */
  image_attachments: z.array(ImageAttachment).max(MAX_IMAGE_ATTACHMENTS).optional(),
  /** halo: the specialists to run, bypassing the planner (override for experiments); tags this deployment cannot serve are left out. */
  capabilities: z.array(Capability).min(1).max(Capability.options.length).optional(),
  /** supervisor: files given with the query (the data agent takes its data from the first CSV or JSON one); other workflows ignore them. */
  attachments: Attachments.optional(),
});
export type SessionOptions = z.infer<typeof SessionOptions>;

/**
 * The options that belong to one workflow, and which: one table for the gateway's API, the
 * OpenAI-compatible endpoint's metadata, the CLI and the coordinator's submit.
 */
export const WORKFLOW_OPTIONS = {
  mode: "supervisor",
  depth: "supervisor",
  scenario: "supervisor",
  provider: "supervisor",
  model: "supervisor",
  tier: "supervisor",
  image_attachments: "supervisor",
  capabilities: "halo",
  strategy_profile: "blackboard",
  retry_limit: "critic-chain",
} as const satisfies Partial<Record<keyof SessionOptions, WorkflowName>>;
export type WorkflowOption = keyof typeof WORKFLOW_OPTIONS;

/** An option sent with a workflow it does not belong to. */
export interface MisplacedOption {
  readonly option: WorkflowOption;
  /** The workflow the option belongs to. */
  readonly belongsTo: WorkflowName;
  /** Says both, for the client. */
  readonly message: string;
}

/** The first option in `options` (an absent or undefined value is not sent) that belongs to another workflow than `workflow`; null when none. */
export function misplacedOption(workflow: WorkflowName, options: object): MisplacedOption | null {
  for (const [option, belongsTo] of Object.entries(WORKFLOW_OPTIONS) as [WorkflowOption, WorkflowName][]) {
    if (belongsTo === workflow || (options as Record<string, unknown>)[option] === undefined) continue;
    return {
      option,
      belongsTo,
      message: `the option "${option}" belongs to the ${belongsTo} workflow; this query runs ${workflow}`,
    };
  }
  return null;
}

/** One turn of a conversation (the OpenAI chat shape, text only). */
export const ChatMessage = z.object({
  role: z.enum(["system", "user", "assistant"]),
  content: z.string().max(LIMITS.maxConversationChars),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

/** Earlier turns as a session receives them (see `boundConversation`). */
export const Conversation = z.array(ChatMessage).max(LIMITS.maxConversationMessages);

/**
 * The latest turns that fit `LIMITS.maxConversationMessages` and `LIMITS.maxConversationChars`:
 * older turns go first; the latest turn alone is cut at its start (its end is the most recent text).
 */
export function boundConversation(messages: readonly ChatMessage[]): ChatMessage[] {
  const kept: ChatMessage[] = [];
  let room = LIMITS.maxConversationChars;
  for (let i = messages.length - 1; i >= 0 && kept.length < LIMITS.maxConversationMessages; i--) {
    const m = messages[i]!;
    if (m.content.length <= room) {
      kept.unshift(m);
      room -= m.content.length;
    } else {
      if (kept.length === 0) kept.unshift({ role: m.role, content: m.content.slice(m.content.length - room) });
      break;
    }
  }
  return kept;
}

/**
 * What a session hands on to the next session of its thread besides its turns: clarify's count
 * (the count lives as long as the thread: docs/workflows/clarify.md; null: nothing to hand on),
 * and the thread's long-term references, which the coordinator keeps per thread
 * (docs/workflows/blackboard.md); absent: none.
 */
export const ThreadCarry = z.object({
  clarification_count: z.number().int().nonnegative().nullable(),
  long_term_refs: z.array(LongTermRef).max(BLACKBOARD_LIMITS.maxLongTermRefs).optional(),
});
export type ThreadCarry = z.infer<typeof ThreadCarry>;

/** `<p>.submit` request (core request/reply). The query is checked separately for a precise error. */
export const SubmitRequest = z.object({
  v: V,
  query: z.unknown(),
  workflow: WorkflowName.default("critic-chain"),
  idempotency_key: z.string().min(1).max(200).optional(),
  session_id: SessionId.optional(),
  options: SessionOptions.default({}),
  /** Who owns the session (a gateway's API key name); written into the session's and thread's metadata. */
  owner: Owner.optional(),
  /**
   * Continues (or starts) a thread: the session receives the thread's earlier turns, and when the
   * thread's latest session waits for a person, the query becomes that session's reply instead.
   */
  thread_id: ThreadId.optional(),
  /** Earlier turns given by the client (e.g. an OpenAI request's history); they replace the thread's own. Bounded by `boundConversation`. */
  messages: z.array(ChatMessage).max(1000).optional(),
});
export type SubmitRequest = z.infer<typeof SubmitRequest>;

export const SubmitReply = z.discriminatedUnion("ok", [
  z.object({
    v: V,
    ok: z.literal(true),
    session_id: SessionId,
    created: z.boolean(),
    thread_id: ThreadId.nullable().default(null),
    /** True when the query went to the thread's waiting session as its reply (no new session). */
    replied: z.boolean().default(false),
  }),
  z.object({ v: V, ok: z.literal(false), error: WireError }),
]);
export type SubmitReply = z.infer<typeof SubmitReply>;

/** The fewest characters a query of `workflow` may have (after trimming): 3 for the blackboard's, 1 otherwise. */
export const queryMinChars = (workflow: WorkflowName): number =>
  workflow === "blackboard" ? BLACKBOARD_LIMITS.queryMinChars : LIMITS.queryMinChars;

/**
 * Validates a query for `workflow`: text, at least `queryMinChars(workflow)` and at most 5000
 * characters after trimming. Returns the trimmed text or why not.
 */
export function checkQuery(
  query: unknown,
  workflow: WorkflowName,
): { ok: true; query: string } | { ok: false; reason: string } {
  if (typeof query !== "string") return { ok: false, reason: "the query must be text" };
  const q = query.trim();
  if (q.length === 0) return { ok: false, reason: "the query is empty" };
  const min = queryMinChars(workflow);
  if (q.length < min)
    return { ok: false, reason: `the query is shorter than ${min} characters (the ${workflow} workflow's minimum)` };
  if (q.length > LIMITS.queryMaxChars)
    return { ok: false, reason: `the query is longer than ${LIMITS.queryMaxChars} characters (${q.length})` };
  return { ok: true, query: q };
}

/** A task on `<p>.task.<role>.<op>`: inputs by value, never a live reference. */
export const TaskEnvelope = z.object({
  v: V,
  task_id: TaskId,
  session_id: SessionId,
  role: z.string().max(40),
  op: z.string().max(40),
  attempt: z.number().int().nonnegative(),
  deadline_at: Ms.nullable(),
  /** A backed-off retry: no agent works the task before this time (epoch ms); absent means at once. */
  not_before: Ms.optional(),
  /**
   * Per-session limits the coordinator counts in the session state, as what this task may still
   * use (tool calls before this one was dispatched subtracted): they hold across replicas and restarts.
   */
  allowance: z.object({ tool_calls: z.number().int().nonnegative() }).optional(),
  input: z.unknown(),
});
export type TaskEnvelope = z.infer<typeof TaskEnvelope>;

/** What an agent reports for a task: an output or a typed failure. */
export const TaskOutcome = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), output: z.unknown(), provenance: Provenance }),
  z.object({ ok: z.literal(false), error: WireError, provenance: Provenance.nullable() }),
]);
export type TaskOutcome = z.infer<typeof TaskOutcome>;

const InboxBase = { v: V, session_id: SessionId, input_id: z.string().min(1).max(200) };

/** Inbox inputs on `<p>.inbox.<sid>`: the only way anything reaches a session. */
export const InboxInput = z.discriminatedUnion("kind", [
  z.object({
    ...InboxBase,
    kind: z.literal("start"),
    workflow: WorkflowName,
    query: z.string().min(LIMITS.queryMinChars).max(LIMITS.queryMaxChars),
    options: SessionOptions,
    /** Earlier turns of the conversation (a thread's, or the client's), oldest first; absent = none. */
    messages: Conversation.optional(),
    /** What the thread's latest session handed on (clarify's count); absent = nothing. */
    carry: ThreadCarry.optional(),
  }),
  z.object({
    ...InboxBase,
    kind: z.literal("result"),
    task_id: TaskId,
    role: z.string().max(40),
    op: z.string().max(40),
    outcome: TaskOutcome,
  }),
  z.object({
    ...InboxBase,
    kind: z.literal("timer"),
    task_id: TaskId.nullable(),
    reason: z.enum(["task_deadline", "session_deadline"]),
  }),
  z.object({ ...InboxBase, kind: z.literal("user_reply"), text: z.string().min(1).max(LIMITS.queryMaxChars) }),
  z.object({ ...InboxBase, kind: z.literal("cancel"), reason: z.string().max(500) }),
]);
export type InboxInput = z.infer<typeof InboxInput>;
export type InboxKind = InboxInput["kind"];

/** `<p>.cancel.<sid>` broadcast so agents abort in-flight work. */
export const CancelNotice = z.object({ v: V, session_id: SessionId, reason: z.string().max(500) });
export type CancelNotice = z.infer<typeof CancelNotice>;
