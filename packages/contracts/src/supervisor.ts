import { z } from "zod";
import { LIMITS } from "./limits.js";
import { SupervisorAgent } from "./workflows.js";
import { HaloCitation } from "./halo.js";

/** The supervisor's numbers (docs/workflows/supervisor.md). */
export const SUPERVISOR_LIMITS = {
  /** The shared notes as rendered for the next specialist, labels included (characters). */
  notesBudgetChars: 8000,
  /** What every non-empty notes field gets before the rest goes by priority (characters). */
  notesMinFieldChars: 200,
  /** The chat agent's `agent ⇄ tools` rounds. */
  chatMaxToolIterations: 5,
  /** The code agent's `generate → execute` rounds. */
  codeMaxIterations: 3,
  /** A handoff's task description and its context, each (characters). */
  maxHandoffTaskChars: 2000,
  maxHandoffContextChars: 2000,
  /** The handoff summary (characters): one line per handoff, its task cut to `maxSummaryTaskChars`. */
  maxHandoffSummaryChars: 1200,
  maxSummaryTaskChars: 200,
  /** A routing reason (characters). */
  maxRoutingReasonChars: 1000,
  /** Charts the shared notes keep. */
  maxNoteVisualizations: 5,
} as const;

/** A routing decision below this confidence is flagged `is_low_confidence`, not re-routed. */
export const LOW_ROUTING_CONFIDENCE = 0.5;

/** The router's model output (`{"agent", "confidence", "reason"}`), validated where it comes in. */
export const RoutingResult = z.object({
  agent: SupervisorAgent,
  confidence: z.number().min(0).max(1),
  reason: z.string().max(SUPERVISOR_LIMITS.maxRoutingReasonChars),
});
export type RoutingResult = z.infer<typeof RoutingResult>;

/** The routing decision a session keeps and a `routing` event carries (the RoutingResult dataclass). */
export const RoutingDecision = z
  .object({ ...RoutingResult.shape, is_low_confidence: z.boolean() })
  .refine((d) => d.is_low_confidence === d.confidence < LOW_ROUTING_CONFIDENCE, {
    message: `is_low_confidence means a confidence under ${LOW_ROUTING_CONFIDENCE}`,
    path: ["is_low_confidence"],
  });
export type RoutingDecision = z.infer<typeof RoutingDecision>;

/**
 * Which agent may hand off to which (the handoff matrix, in the agents' order). No agent hands off
 * to itself, and no specialist hands back to chat.
 */
export const HANDOFF_MATRIX: Readonly<Record<SupervisorAgent, readonly SupervisorAgent[]>> = {
  chat: ["research", "code", "writing", "data"],
  research: ["code", "data"],
  writing: ["research"],
  code: ["data"],
  data: ["code"],
};

/** True when the matrix lets `source_agent` hand off to `target_agent` (never to itself). */
export const inHandoffMatrix = (h: { source_agent: SupervisorAgent; target_agent: SupervisorAgent }): boolean =>
  HANDOFF_MATRIX[h.source_agent].includes(h.target_agent);

/** The refinement's issue when a handoff is outside the matrix. */
export const HANDOFF_OUTSIDE_MATRIX = {
  message: "the handoff matrix does not let this agent hand off to that one (nor to itself)",
  path: ["target_agent"],
};

/** A handoff tool's name (`handoff_to_<target_agent>`). */
export type HandoffToolName = `handoff_to_${SupervisorAgent}`;

const HANDOFF_PREFIX = "handoff_to_";

/** The handoff tool that hands the task to `target`. */
export const handoffToolName = (target: SupervisorAgent): HandoffToolName => `${HANDOFF_PREFIX}${target}`;

/** The target a tool name hands off to; null when it is not a handoff tool of one of the agents. */
export function handoffTarget(tool: string): SupervisorAgent | null {
  if (!tool.startsWith(HANDOFF_PREFIX)) return null;
  const parsed = SupervisorAgent.safeParse(tool.slice(HANDOFF_PREFIX.length));
  return parsed.success ? parsed.data : null;
}

/** Handoffs one session may make; at the cap the current agent's answer is final. */
export const MAX_HANDOFFS = 3;

/**
 * One handoff as recorded in state and announced as a `handoff` event (HandoffInfo,
 * its field names verbatim). `context` is null when the agent gave none.
 */
export const HandoffInfo = z
  .object({
    source_agent: SupervisorAgent,
    target_agent: SupervisorAgent,
    task_description: z.string().min(1).max(SUPERVISOR_LIMITS.maxHandoffTaskChars),
    context: z.string().max(SUPERVISOR_LIMITS.maxHandoffContextChars).nullable(),
  })
  .refine(inHandoffMatrix, HANDOFF_OUTSIDE_MATRIX);
export type HandoffInfo = z.infer<typeof HandoffInfo>;

/**
 * Why a handoff was refused, as a `handoff_refused` event says it (the three handoff controls): the
 * matrix does not allow it (a handoff to the agent itself included), it would hand the task straight
 * back to the agent that handed it over (A → B → A), or the session already made MAX_HANDOFFS.
 */
export const HandoffRefusedReason = z.enum(["matrix", "ping_pong", "cap"]);
export type HandoffRefusedReason = z.infer<typeof HandoffRefusedReason>;

/** An image a client sends with its query (`image_attachments`): where it is, and what kind. */
export const ImageAttachment = z
  .object({
    url: z
      .string()
      .max(2000)
      .refine((u) => /^https?:\/\/[^\s]+$/i.test(u), "an image attachment is an http(s) URL"),
    mime_type: z.enum(["image/png", "image/jpeg", "image/gif", "image/webp"]).optional(),
    name: z.string().min(1).max(200).optional(),
  })
  .strict();
export type ImageAttachment = z.infer<typeof ImageAttachment>;

/** The images one query may carry. */
export const MAX_IMAGE_ATTACHMENTS = 5;

/** The model provider a client names, e.g. `openai`. */
export const ModelProvider = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/, "a provider is 1-40 of [A-Za-z0-9_.-]");

/** The session's handoffs in one line each, oldest first (the handoff manager's summary). */
export function handoffSummary(history: readonly HandoffInfo[]): string {
  if (history.length === 0) return "No handoffs.";
  const max = SUPERVISOR_LIMITS.maxSummaryTaskChars;
  const lines = history.map((h, i) => {
    const task = h.task_description.length > max ? `${h.task_description.slice(0, max - 1)}…` : h.task_description;
    return `${i + 1}. ${h.source_agent} → ${h.target_agent}: ${task.replace(/\s+/g, " ")}`;
  });
  return [`Handoffs: ${history.length} of ${MAX_HANDOFFS}.`, ...lines].join("\n");
}

/** The arguments of a `handoff_to_<target>` tool as the agent's model gives them. */
export const HandoffArgs = z.object({
  task_description: z
    .string()
    .max(SUPERVISOR_LIMITS.maxHandoffTaskChars)
    .refine((s) => s.trim().length > 0, "a handoff needs a task description"),
  context: z.string().max(SUPERVISOR_LIMITS.maxHandoffContextChars).optional(),
});
export type HandoffArgs = z.infer<typeof HandoffArgs>;

/** The languages the sandbox runs (what the code agent generates and a `code_result` reports). */
export const CodeLanguage = z.enum(["javascript", "python"]);
export type CodeLanguage = z.infer<typeof CodeLanguage>;

/** Keys one of which a Vega-Lite spec's top level has: a single view's mark or a composition. */
const VEGA_LITE_VIEWS = ["mark", "layer", "concat", "hconcat", "vconcat", "facet", "repeat"];

/** A Vega-Lite spec with its data inline (the data agent's chart; the `visualization` event's `spec`). */
export const VegaLiteSpec = z
  .record(z.string(), z.unknown())
  .refine((s) => VEGA_LITE_VIEWS.some((k) => k in s), `a Vega-Lite spec has one of ${VEGA_LITE_VIEWS.join(", ")}`)
  .refine(
    (s) => JSON.stringify(s).length <= LIMITS.maxVisualizationSpecChars,
    `the spec is over ${LIMITS.maxVisualizationSpecChars} characters of JSON`,
  );
export type VegaLiteSpec = z.infer<typeof VegaLiteSpec>;

/** Research depth: how many search rounds the research agent runs and how many sources it keeps. */
export const ResearchDepth = z.enum(["quick", "standard", "deep"]);
export type ResearchDepth = z.infer<typeof ResearchDepth>;

/** Per depth: search iterations and sources kept (1/3/5 and 5/10/20). */
export const RESEARCH_DEPTHS: Readonly<
  Record<ResearchDepth, { readonly searchIterations: number; readonly sourcesKept: number }>
> = {
  quick: { searchIterations: 1, sourcesKept: 5 },
  standard: { searchIterations: 3, sourcesKept: 10 },
  deep: { searchIterations: 5, sourcesKept: 20 },
};

const NoteText = z.string().max(LIMITS.maxTextChars);

/**
 * The shared notes: what the specialists share across handoffs, carried in the session's
 * `shared_memory` (the design's SharedAgentMemory, its ten fields verbatim and in its order, all
 * optional). A research source has a halo citation's fields (those
 * of the `source` event); a visualization is a Vega-Lite spec.
 */
export const SharedAgentMemory = z.object({
  research_findings: NoteText.optional(),
  research_sources: z.array(HaloCitation).max(RESEARCH_DEPTHS.deep.sourcesKept).optional(),
  generated_code: NoteText.optional(),
  code_language: CodeLanguage.optional(),
  execution_results: NoteText.optional(),
  writing_outline: NoteText.optional(),
  writing_draft: NoteText.optional(),
  data_analysis_plan: NoteText.optional(),
  data_visualizations: z.array(VegaLiteSpec).max(SUPERVISOR_LIMITS.maxNoteVisualizations).optional(),
  additional_context: NoteText.optional(),
});
export type SharedAgentMemory = z.infer<typeof SharedAgentMemory>;

/** A shared notes field's name. */
export const NoteField = SharedAgentMemory.keyof();
export type NoteField = z.infer<typeof NoteField>;

/** The truncation priorities: 3 is kept longest, 1 is cut first. */
export const NOTE_PRIORITY: Readonly<Record<NoteField, 1 | 2 | 3>> = {
  research_findings: 3,
  generated_code: 3,
  writing_draft: 3,
  research_sources: 2,
  execution_results: 2,
  writing_outline: 2,
  data_analysis_plan: 2,
  additional_context: 2,
  code_language: 1,
  data_visualizations: 1,
};

/** Which nodes stream their model's tokens to clients (STREAMING_CONFIG, verbatim). */
export const STREAMING_CONFIG = {
  write: true,
  finalize: true,
  summarize: true,
  agent: true,
  generate: false,
  outline: false,
  synthesize: true,
  analyze: false,
  router: false,
  tools: false,
  search_agent: false,
  search_tools: false,
} as const satisfies Readonly<Record<string, boolean>>;
export type StreamingNode = keyof typeof STREAMING_CONFIG;
