import { z } from "zod";
import { LIMITS } from "./limits.js";
import { ErrorCode } from "./errors.js";

/** Halo's numbers (docs/workflows/halo.md). */
export const HALO_LIMITS = {
  /** Join deadline of the specialists' fan-out when the deployment sets none (ms). */
  defaultJoinDeadlineMs: 30_000,
  /** Citations one specialist's answer may carry. */
  maxCitationsPerAnswer: 10,
  /** One specialist's answer (characters). */
  maxAnswerChars: 4000,
  /** The synthesized answer: room for every answer, every source line and the judge's note. */
  maxResponseChars: 200_000,
} as const;

/** The capability tags, in their fixed order: what the planner picks and the specialists serve. */
export const Capability = z.enum(["graph", "rag", "biomcp", "web", "llama_mcp", "chitchat"]);
export type Capability = z.infer<typeof Capability>;

const MAX_CAPABILITIES = Capability.options.length;

/**
 * One source a specialist's answer rests on: a web page (`url`) or a file or triple (`path`, e.g.
 * `corpus/notes.md` or `triples.jsonl:12`). The same fields as the `source` event, so each merged
 * citation can be announced as one.
 */
export const HaloCitation = z
  .object({
    title: z.string().min(1).max(300),
    /** A web page; null for a file. */
    url: z.url().max(2000).nullable(),
    /** A file (or file:line); null for a web page. */
    path: z.string().min(1).max(300).nullable(),
    snippet: z.string().max(500),
  })
  .refine((c) => c.url !== null || c.path !== null, { message: "a citation needs a url or a path", path: ["url"] });
export type HaloCitation = z.infer<typeof HaloCitation>;

/** What every specialist op answers (the AgentResponse: `response_str`, `citations`). */
export const SpecialistAnswer = z.object({
  response_str: z
    .string()
    .max(HALO_LIMITS.maxAnswerChars)
    .refine((s) => s.trim().length > 0, "an answer needs some text"),
  citations: z.array(HaloCitation).max(HALO_LIMITS.maxCitationsPerAnswer),
});
export type SpecialistAnswer = z.infer<typeof SpecialistAnswer>;

/**
 * The planner's model output (`{"capabilities": [...]}`), asked for in `json_object` mode.
 * An empty list or repeats pass here; the workflow turns them into its fallback and de-duplicates.
 */
export const CapabilityPlan = z.object({ capabilities: z.array(Capability).max(LIMITS.maxListItems) });
export type CapabilityPlan = z.infer<typeof CapabilityPlan>;

/**
 * The judge's domain hints: per capability, words that (found in the question) add `bonus` to
 * that specialist's score. A deployment may replace the workflow's own table with its own.
 */
export const DomainHints = z.partialRecord(
  Capability,
  z.object({
    bonus: z.number().int().min(1).max(3),
    /** Lowercase words or phrases, matched as whole words. */
    keywords: z.array(z.string().min(1).max(60)).min(1).max(100),
  }),
);
export type DomainHints = z.infer<typeof DomainHints>;

/**
 * What one specialist contributed: its own answer, or, when it failed, timed out or was
 * abandoned at the join deadline, the short availability message (`unavailable`), which
 * the judge scores 0.
 */
export const SpecialistOutput = z
  .object({
    capability: Capability,
    status: z.enum(["answered", "unavailable"]),
    response_str: z.string().max(HALO_LIMITS.maxAnswerChars),
    citations: z.array(HaloCitation).max(HALO_LIMITS.maxCitationsPerAnswer),
    /** Why it is unavailable; null when it answered. */
    error_code: ErrorCode.nullable(),
    /** From dispatch to its answer, failure or the join. */
    latency_ms: z.number().int().nonnegative(),
  })
  .refine((o) => (o.status === "answered") === (o.error_code === null), {
    message: "an unavailable specialist has an error code, an answered one none",
    path: ["error_code"],
  })
  .refine((o) => o.status === "answered" || o.citations.length === 0, {
    message: "an unavailable specialist cites nothing",
    path: ["citations"],
  });
export type SpecialistOutput = z.infer<typeof SpecialistOutput>;

const Question = z.string().min(1).max(LIMITS.maxTextChars);

/** `planner.capabilities` request: the question and what this deployment can serve (the plan may name only these, and chitchat). */
export const CapabilitiesRequest = z.object({
  question: Question,
  available: z.array(Capability).min(1).max(MAX_CAPABILITIES),
});
export type CapabilitiesRequest = z.infer<typeof CapabilitiesRequest>;

/**
 * `planner.capabilities` response: the model's plan as it came (validated tags, repeats kept), or,
 * when its one reply was not a valid plan (not JSON, an unknown tag), no tags and why. The
 * workflow turns an empty or invalid plan into `["chitchat"]`: a normal path, not a failed task.
 */
export const CapabilitiesResult = z.object({
  capabilities: z.array(Capability).max(LIMITS.maxListItems),
  invalid_reason: z.string().max(500).nullable(),
});
export type CapabilitiesResult = z.infer<typeof CapabilitiesResult>;

/** An MCP server's name as configured (`AGENTMESH_MCP_SERVERS`); halo's biomcp and llama_mcp are servers of those names. */
export const McpServerRef = z.string().regex(/^[a-z][a-z0-9_]{0,23}$/);

/** `graph.answer` and `chat.chitchat` request: the question. */
export const SpecialistRequest = z.object({ question: Question });
export type SpecialistRequest = z.infer<typeof SpecialistRequest>;

/** `mcp.answer` request: the question and the configured server to ask. */
export const McpAnswerRequest = z.object({ question: Question, server: McpServerRef });
export type McpAnswerRequest = z.infer<typeof McpAnswerRequest>;

/** `retriever.answer` request (halo's rag and web): the question and where to look. */
export const RetrieverAnswerRequest = z.object({ question: Question, source: z.enum(["corpus", "web"]) });
export type RetrieverAnswerRequest = z.infer<typeof RetrieverAnswerRequest>;

/** Which task the session is waiting for: the planner, the specialists' fan-out, or nothing. */
export const HaloPhase = z.enum(["plan", "specialists", "done"]);
export type HaloPhase = z.infer<typeof HaloPhase>;

/** Where the plan came from: the planner model, the request (`options.capabilities`), or the `["chitchat"]` fallback. */
export const PlanSource = z.enum(["model", "override", "fallback"]);
export type PlanSource = z.infer<typeof PlanSource>;

const Capabilities = z.array(Capability).max(MAX_CAPABILITIES);

/**
 * halo session data, the field names verbatim: `capabilities`, `response_str`,
 * `citations`, `judge_response`.
 */
export const HaloData = z.object({
  workflow: z.literal("halo"),
  question: z.string().max(LIMITS.maxTextChars),
  phase: HaloPhase,
  /** What this deployment can serve (its MCP servers, a corpus, a web key), copied from the coordinator's config at creation. */
  available_capabilities: Capabilities.min(1),
  /** The specialists' join deadline (ms after their dispatch), from the coordinator's config. */
  join_deadline_ms: z.number().int().positive(),
  /** The deployment's domain hints, when it replaces the workflow's own table; null = the workflow's. */
  domain_hints: DomainHints.nullable(),
  /** The plan: empty until planned, then de-duplicated, in order, all available. */
  capabilities: Capabilities,
  plan_source: PlanSource.nullable(),
  /** Why the plan fell back to `["chitchat"]` (invalid JSON, an unknown tag, …); null otherwise. */
  plan_fallback_reason: z.string().max(500).nullable(),
  /** Specialists dispatched and not yet in. */
  pending: Capabilities,
  /** One per specialist that came back or was given up on, in arrival order. */
  outputs: z.array(SpecialistOutput).max(MAX_CAPABILITIES),
  response_str: z.string().max(HALO_LIMITS.maxResponseChars).nullable(),
  /** The merged, de-duplicated sources; the answer's inline `[n]` is the n-th. */
  citations: z.array(HaloCitation).max(MAX_CAPABILITIES * HALO_LIMITS.maxCitationsPerAnswer),
  judge_response: z.string().max(LIMITS.maxTextChars).nullable(),
  error: z.string().max(4000).nullable(),
  error_component: z.string().max(100).nullable(),
});
export type HaloData = z.infer<typeof HaloData>;

/**
 * What a deployment tells halo (the coordinator's config, copied into each new session's data):
 * the capabilities it can serve, the specialists' join deadline, and optionally its own domain
 * hints in place of the workflow's table.
 */
export const HaloSettings = z.object({
  available_capabilities: Capabilities.min(1),
  join_deadline_ms: z.number().int().min(100).max(600_000),
  domain_hints: DomainHints.nullable(),
});
export type HaloSettings = z.infer<typeof HaloSettings>;
