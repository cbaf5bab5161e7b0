import { z } from "zod";
import { LIMITS } from "./limits.js";
import { HaloCitation } from "./halo.js";
import { ChatMessage, Conversation } from "./messages.js";

/** The clarify workflow's numbers. */
export const CLARIFY_LIMITS = {
  /** Clarifications before the orchestrator forces research (`max_clarifications = 2`). */
  defaultMaxClarifications: 2,
  /** Messages the orchestrator's prompt shows (`max_history = 10`). */
  defaultMaxHistory: 10,
  /** The highest a deployment may set either to. */
  maxClarificationsCeiling: 10,
  maxHistoryCeiling: 40,
  /** A clarification question (characters). */
  maxQuestionChars: 1000,
  /** The orchestrator's free-text reply as kept (characters). */
  maxDecisionChars: 4000,
  /** Passages the research agent hands the synthesis agent. */
  maxPassages: 12,
  /** The conversation a clarify session keeps: the thread's turns, the query, one question and its reply, the answer. */
  maxMessages: LIMITS.maxConversationMessages + 4,
  /** Orchestrator runs a session records (each session runs it at most twice: at the start and after the reply). */
  maxDecisions: 10,
} as const;

/** Where the orchestrator routes (`next_agent`). */
export const ClarifyRoute = z.enum(["clarification", "research"]);
export type ClarifyRoute = z.infer<typeof ClarifyRoute>;

/** Which agent ran last (`last_agent`; Layer 2 looks for `clarification`). */
export const ClarifyAgent = z.enum(["orchestrator", "clarification", "research", "synthesis"]);
export type ClarifyAgent = z.infer<typeof ClarifyAgent>;

/**
 * The orchestrator's three layers: 1 the clarification cap (forced research), 2 the answered
 * clarification (research without a model call), 3 the model's decision; `fallback` is Layer 3
 * whose model call failed (it falls back to research).
 */
export const ClarifyLayer = z.enum(["cap", "answered", "model", "fallback"]);
export type ClarifyLayer = z.infer<typeof ClarifyLayer>;

/** One orchestrator run, as the session records it and its `orchestration` event announces it. */
export const OrchestratorDecision = z.object({
  iteration: z.number().int().positive(),
  layer: ClarifyLayer,
  next_agent: ClarifyRoute,
  /** The count after the decision, and the cap it was checked against. */
  clarification_count: z.number().int().nonnegative(),
  max_clarifications: z.number().int().nonnegative(),
  /** Why: the layer's rule, or the model's reply (clipped). */
  reason: z.string().max(CLARIFY_LIMITS.maxDecisionChars),
});
export type OrchestratorDecision = z.infer<typeof OrchestratorDecision>;

/** A question the clarification agent asked and the person's reply (null until it comes). */
export const ClarificationExchange = z.object({
  question: z.string().min(1).max(CLARIFY_LIMITS.maxQuestionChars),
  answer: z.string().max(LIMITS.queryMaxChars).nullable(),
});
export type ClarificationExchange = z.infer<typeof ClarificationExchange>;

const History = z.array(ChatMessage).min(1).max(CLARIFY_LIMITS.maxHistoryCeiling);

/** `orchestrator.decide` request: the last `max_history` messages and the count against its cap (the prompt variables). */
export const DecideRequest = z.object({
  messages: History,
  clarification_count: z.number().int().nonnegative(),
  max_clarifications: z.number().int().nonnegative(),
});
export type DecideRequest = z.infer<typeof DecideRequest>;

/** `orchestrator.decide` response: the model's free text ("Decision: … Reasoning: …"), parsed by the workflow (docs/workflows/clarify.md). */
export const DecideResult = z.object({ decision: z.string().max(CLARIFY_LIMITS.maxDecisionChars) });
export type DecideResult = z.infer<typeof DecideResult>;

/** `clarifier.ask` request: the conversation so far (the query last). */
export const AskRequest = z.object({ messages: History });
export type AskRequest = z.infer<typeof AskRequest>;

/** `clarifier.ask` response: one question for the person. */
export const AskResult = z.object({
  question: z
    .string()
    .max(CLARIFY_LIMITS.maxQuestionChars)
    .refine((s) => s.trim().length > 0, "a clarification needs a question"),
});
export type AskResult = z.infer<typeof AskResult>;

/** Where a gathered passage came from: the document corpus, the web, or the conversation itself (memory). */
export const PassageSource = z.enum(["corpus", "web", "memory"]);
export type PassageSource = z.infer<typeof PassageSource>;

/** One passage the research agent found; corpus and web passages carry their citation, memory ones none. */
export const GatheredPassage = z
  .object({
    source: PassageSource,
    text: z.string().min(1).max(2000),
    citation: HaloCitation.nullable(),
  })
  .refine((p) => (p.source === "memory") === (p.citation === null), {
    message: "corpus and web passages are cited, memory ones are not",
    path: ["citation"],
  });
export type GatheredPassage = z.infer<typeof GatheredPassage>;

/** `researcher.gather` request: the question, the clarification it got (if any) and the conversation as memory. */
export const GatherRequest = z.object({
  question: z.string().min(1).max(LIMITS.queryMaxChars),
  clarification: ClarificationExchange.nullable(),
  messages: Conversation,
});
export type GatherRequest = z.infer<typeof GatherRequest>;

/** `researcher.gather` response: the search it ran, the passages found (most relevant first) and what was unavailable. */
export const GatherResult = z.object({
  query: z.string().max(400),
  passages: z.array(GatheredPassage).max(CLARIFY_LIMITS.maxPassages),
  gaps: z.array(z.string().max(300)).max(5),
});
export type GatherResult = z.infer<typeof GatherResult>;

/** `writer.synthesize` request: what the research agent gathered, numbered as given (a cited passage's `[n]` is its place among the cited ones). */
export const SynthesizeRequest = z.object({
  question: z.string().min(1).max(LIMITS.queryMaxChars),
  clarification: ClarificationExchange.nullable(),
  messages: Conversation,
  passages: z.array(GatheredPassage).max(CLARIFY_LIMITS.maxPassages),
});
export type SynthesizeRequest = z.infer<typeof SynthesizeRequest>;

/** `writer.synthesize` response: the answer, citing sources as `[n]`. */
export const SynthesizeResult = z.object({
  answer: z
    .string()
    .max(LIMITS.maxTextChars)
    .refine((s) => s.trim().length > 0, "an answer needs some text"),
});
export type SynthesizeResult = z.infer<typeof SynthesizeResult>;

/** Which step a clarify session is in. */
export const ClarifyPhase = z.enum(["orchestrate", "clarify", "awaiting_user", "research", "synthesize", "done"]);
export type ClarifyPhase = z.infer<typeof ClarifyPhase>;

/**
 * clarify session data, the state fields verbatim: `next_agent`, `last_agent`,
 * `clarification_count`, `iteration`, `messages`.
 */
export const ClarifyData = z.object({
  workflow: z.literal("clarify"),
  question: z.string().max(LIMITS.queryMaxChars),
  phase: ClarifyPhase,
  /** The conversation: the thread's earlier turns, the query, the clarification asked and its reply, the answer. */
  messages: z.array(ChatMessage).max(CLARIFY_LIMITS.maxMessages),
  next_agent: ClarifyRoute.nullable(),
  last_agent: ClarifyAgent.nullable(),
  /** Clarifications in a row; it lives as long as the thread (a new session of the thread starts from the last one's). */
  clarification_count: z.number().int().nonnegative(),
  iteration: z.number().int().nonnegative(),
  /** The deployment's settings, copied at creation. */
  max_clarifications: z.number().int().nonnegative(),
  max_history: z.number().int().positive(),
  decisions: z.array(OrchestratorDecision).max(CLARIFY_LIMITS.maxDecisions),
  clarification: ClarificationExchange.nullable(),
  research: GatherResult.nullable(),
  final_answer: z
    .string()
    .max(LIMITS.maxTextChars * 2)
    .nullable(),
  /** The sources the answer cites, `[n]` being the n-th. */
  citations: z.array(HaloCitation).max(CLARIFY_LIMITS.maxPassages),
  error: z.string().max(4000).nullable(),
  error_component: z.string().max(100).nullable(),
});
export type ClarifyData = z.infer<typeof ClarifyData>;

/** What a deployment tells clarify (the coordinator's config, copied into each new session). */
export const ClarifySettings = z.object({
  max_clarifications: z.number().int().min(0).max(CLARIFY_LIMITS.maxClarificationsCeiling),
  max_history: z.number().int().min(1).max(CLARIFY_LIMITS.maxHistoryCeiling),
});
export type ClarifySettings = z.infer<typeof ClarifySettings>;
