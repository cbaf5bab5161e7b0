import { z } from "zod";
import { ErrorCode } from "./errors.js";
import { ToolFlags } from "./tool-flags.js";

/**
 * The blackboard workflow's heuristic limits, enforced by the schemas below so an
 * agent output that breaks one is a typed validation failure. Character caps on free text are
 * ours: they keep the largest request (decision.plan) under the 256 KB message limit.
 */
export const BLACKBOARD_LIMITS = {
  queryMinChars: 3,
  queryMaxChars: 5000,
  /** The retriever takes 3-500 characters: a query derived from the (≤ 5000) question. */
  retrieverQueryMinChars: 3,
  retrieverQueryMaxChars: 500,
  maxEntities: 50,
  maxSubGoals: 10,
  maxShortTermItems: 100,
  maxBannedTools: 50,
  maxSuccessfulTools: 100,
  /** Behavioural patterns the memory keeps (critic-derived, one per kind and tool). */
  maxPatterns: 20,
  /** Patterns one critic report may add. */
  maxPatternsPerReport: 3,
  /** Long-term references a session's memory holds (the thread's first, then its own). */
  maxLongTermRefs: 20,
  maxRetrievedItems: 20,
  /** Component ceilings: a strategy profile may ask for less, never for more. */
  maxPlanSteps: 20,
  maxPlanRewrites: 5,
  minStepDescriptionChars: 5,
  maxIssues: 20,
  /** One tool call gets at most this many attempts in all (inside the executor). */
  maxToolAttempts: 3,
  /** Per-attempt tool timeout range (3-5 seconds). */
  minToolTimeoutMs: 3000,
  maxToolTimeoutMs: 5000,
  /** Tools a planner is shown. */
  maxTools: 16,
  /** Re-runs of a plan step, and re-dispatches of a failed agent task, back off: 500 ms × 2^(n-1), at most 8 s. */
  retryBackoffBaseMs: 500,
  retryBackoffFactor: 2,
  retryBackoffCapMs: 8000,
  /** The default verdict thresholds: a step is acceptable only with quality ≥ 0.6 and hallucination risk ≤ 0.4. */
  defaultMinQuality: 0.6,
  defaultMaxHallucinationRisk: 0.4,
} as const;

const L = BLACKBOARD_LIMITS;
const text = (max: number) => z.string().max(max);
const line = (max: number) => z.string().min(1).max(max);
const Probability = z.number().min(0).max(1);
const Index = z
  .number()
  .int()
  .min(0)
  .max(L.maxPlanSteps - 1);
const jsonLength = (v: unknown) => JSON.stringify(v).length;

/** The question as the perception agent takes it: 3-5000 characters. */
export const BlackboardQuery = z.string().min(L.queryMinChars).max(L.queryMaxChars);
/** What the retriever (and the executor's RAG and web strategies) search with: 3-500 characters. */
export const RetrieverQuery = z.string().min(L.retrieverQueryMinChars).max(L.retrieverQueryMaxChars);

/** The strategy profiles; the limits of each live in one table in `@agentmesh/workflows`. */
export const StrategyProfile = z.enum(["CONSERVATIVE", "EXPLORATORY", "FALLBACK"]);
export type StrategyProfile = z.infer<typeof StrategyProfile>;
/** Chosen when a session does not say: the cheapest, most predictable profile. */
export const DEFAULT_STRATEGY_PROFILE: StrategyProfile = "CONSERVATIVE";

/** How a plan step is carried out: the step's own tool, RAG over the corpus, or web search. Listed in priority order. */
export const ExecutionStrategy = z.enum(["tool", "rag", "web"]);
export type ExecutionStrategy = z.infer<typeof ExecutionStrategy>;

/**
 * A tool's registry name: a built-in's snake_case name, or an MCP server's tool as
 * `mcp.<server>.<tool>` (the server's name as `AGENTMESH_MCP_SERVERS` allows it, the tool's as the
 * tools registry accepts it), so plans can name the tools of any configured MCP server.
 */
export const ToolName = z
  .string()
  .regex(
    /^(?:[a-z][a-z0-9_]{0,39}|mcp\.[a-z][a-z0-9_]{0,23}\.[A-Za-z0-9_-]{1,50})$/,
    "tool names are snake_case (at most 40 characters) or mcp.<server>.<tool>",
  );
/** The pseudo-tool every plan ends with: the executor writes the answer from the accepted results. */
export const SUMMARIZE_TOOL = "summarize";

/** Where a passage came from: a corpus file (or a web page's URL) and the quoted passage. */
export const Citation = z.object({ path: line(300), passage: line(500) });
export type Citation = z.infer<typeof Citation>;

// ---------------------------------------------------------------------------------------------
// perception.perceive -> PerceptionSnapshot

export const EntityKind = z.enum(["name", "number", "quoted", "term"]);
/** What the question (or a step result) is after; `arithmetic` and `conversation` need no retrieval. */
export const Intent = z.enum(["arithmetic", "lookup", "explanation", "comparison", "code", "conversation", "other"]);
export type Intent = z.infer<typeof Intent>;

/** The perception agent's reading of a query or a step result. */
export const PerceptionSnapshot = z.object({
  entities: z.array(z.object({ text: line(100), kind: EntityKind })).max(L.maxEntities),
  intent: Intent,
  constraints: z.array(line(200)).max(10),
  sub_goals: z.array(line(200)).max(L.maxSubGoals),
  confidence: Probability,
  /** Names of suspicious patterns seen (e.g. `xss`, `code_injection`, `path_traversal`): flagged, never executed. */
  suspicious_patterns: z.array(line(60)).max(10),
  /** For a step result: does it satisfy the step's goal? Null for a query. */
  goal_satisfied: z.boolean().nullable(),
  notes: text(1000),
});
export type PerceptionSnapshot = z.infer<typeof PerceptionSnapshot>;

// ---------------------------------------------------------------------------------------------
// memory.update -> MemoryState

export const MemoryItemKind = z.enum(["query", "perception", "step", "critic", "user", "note"]);
export const MemoryItem = z.object({ kind: MemoryItemKind, content: line(240), step_index: Index.nullable() });
export type MemoryItem = z.infer<typeof MemoryItem>;

const uniqueTools = (list: ReadonlyArray<{ tool: string }>) => new Set(list.map((t) => t.tool)).size === list.length;

/**
 * What a critic report taught about how to work: `prefer` a tool that gave accepted results,
 * `avoid` one whose results were rejected, `verify` one whose output looked made up, `ask` a
 * person for steps like one that needed their input.
 */
export const PatternKind = z.enum(["prefer", "avoid", "verify", "ask"]);
export type PatternKind = z.infer<typeof PatternKind>;

/** One pattern as derived from one critic report (the memory agent's model output, or its rule's). */
export const PatternDraft = z.object({
  kind: PatternKind,
  /** The tool it is about (the step's), or null for one about the kind of step. */
  tool: ToolName.nullable(),
  pattern: line(200),
});
export type PatternDraft = z.infer<typeof PatternDraft>;

/** What the memory agent derives from one critic report: at most 3 patterns. */
export const MemoryPatterns = z.object({ patterns: z.array(PatternDraft).max(L.maxPatternsPerReport) });
export type MemoryPatterns = z.infer<typeof MemoryPatterns>;

/** A pattern in the memory, with how many critic reports showed it. */
export const BehaviourPattern = PatternDraft.extend({ seen: z.number().int().min(1) });
export type BehaviourPattern = z.infer<typeof BehaviourPattern>;

/** A long-term reference: one line worth keeping beyond the session (an accepted step's outcome, the answer). */
export const LongTermRef = line(200);

/** The session's memory. The memory agent is stateless: it gets this by value and returns the next one. */
export const MemoryState = z.object({
  short_term: z.array(MemoryItem).max(L.maxShortTermItems),
  banned_tools: z
    .array(z.object({ tool: ToolName, reason: text(200) }))
    .max(L.maxBannedTools)
    .refine(uniqueTools, "a tool is banned twice"),
  successful_tools: z
    .array(z.object({ tool: ToolName, purpose: text(120), successes: z.number().int().min(1) }))
    .max(L.maxSuccessfulTools),
  /** Critic-derived behavioural patterns, oldest first; one per kind and tool. */
  patterns: z
    .array(BehaviourPattern)
    .max(L.maxPatterns)
    .refine(
      (list) => new Set(list.map((p) => `${p.kind}:${p.tool ?? ""}`)).size === list.length,
      "a pattern kind is kept twice for one tool",
    ),
  /** What the thread's earlier sessions kept, then what this session adds; the latest 20. */
  long_term_refs: z.array(LongTermRef).max(L.maxLongTermRefs),
});
export type MemoryState = z.infer<typeof MemoryState>;

/** Memory before anything happened. */
export const EMPTY_MEMORY: MemoryState = {
  short_term: [],
  banned_tools: [],
  successful_tools: [],
  patterns: [],
  long_term_refs: [],
};

// ---------------------------------------------------------------------------------------------
// retriever.retrieve -> RetrievalBundle

export const RetrievalSource = z.enum(["memory", "corpus", "web"]);
export type RetrievalSource = z.infer<typeof RetrievalSource>;

export const RetrievedItem = z
  .object({ source: RetrievalSource, content: line(1000), relevance: Probability, citation: Citation.nullable() })
  .refine((i) => i.source !== "corpus" || i.citation !== null, {
    message: "a corpus item needs its citation",
    path: ["citation"],
  });

/**
 * How the corpus passages of a retrieval were ranked: `hybrid` (BM25 and embedding cosine fused
 * by reciprocal rank) or `bm25` alone, with the reason when it is BM25 only (no embeddings
 * endpoint configured, the endpoint failed, the vectors not ready yet). docs/retrieval.md.
 */
export const CorpusRanking = z.object({ method: z.enum(["hybrid", "bm25"]), note: text(300) });
export type CorpusRanking = z.infer<typeof CorpusRanking>;

/** Context snippets with relevance, a summary and the open questions that show knowledge gaps. */
export const RetrievalBundle = z
  .object({
    items: z.array(RetrievedItem).max(L.maxRetrievedItems),
    summary: text(2000),
    open_questions: z.array(line(300)).max(10),
    /** Null when the corpus was not searched (or the search failed); absent in bundles written before it existed. */
    corpus_ranking: CorpusRanking.nullable().default(null),
  })
  .refine((b) => b.items.length === 0 || b.summary.trim().length > 0, {
    message: "a bundle with items needs a summary",
    path: ["summary"],
  });
export type RetrievalBundle = z.infer<typeof RetrievalBundle>;

// ---------------------------------------------------------------------------------------------
// decision.plan -> Plan (recorded on the blackboard as a PlanVersion)

/** One named argument of a tool call (a list of pairs keeps the schema strict-mode friendly). */
export const ToolArg = z.object({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,39}$/),
  value: z.union([z.string().max(2000), z.number(), z.boolean(), z.null()]),
});
export type ToolArg = z.infer<typeof ToolArg>;

export const PlanStep = z.object({
  description: z
    .string()
    .min(L.minStepDescriptionChars)
    .max(300)
    .refine(
      (s) => s.trim().length >= L.minStepDescriptionChars,
      `a step description needs at least ${L.minStepDescriptionChars} characters`,
    ),
  tool: ToolName,
  args: z
    .array(ToolArg)
    .max(8)
    .refine((a) => new Set(a.map((x) => x.name)).size === a.length, "an argument is named twice")
    .refine((a) => jsonLength(a) <= 2000, "the arguments are over 2000 characters of JSON"),
  expected_outcome: text(300),
});
export type PlanStep = z.infer<typeof PlanStep>;

/** The decision agent's plan: at most 20 steps, each naming a tool, ending in one `summarize` step. */
export const Plan = z.object({
  steps: z
    .array(PlanStep)
    .min(1)
    .max(L.maxPlanSteps)
    .refine((s) => s.at(-1)?.tool === SUMMARIZE_TOOL, `a plan ends with a ${SUMMARIZE_TOOL} step`)
    .refine((s) => s.slice(0, -1).every((x) => x.tool !== SUMMARIZE_TOOL), `only the last step may ${SUMMARIZE_TOOL}`),
  rationale: text(1000),
});
export type Plan = z.infer<typeof Plan>;

/** A tool as a planner sees it: name, description and the JSON schema of its input. */
export const ToolInfo = z.object({
  name: ToolName,
  description: line(500),
  input_schema: z
    .record(z.string(), z.unknown())
    .refine((s) => jsonLength(s) <= 3000, "the input schema is over 3000 characters of JSON"),
});
export type ToolInfo = z.infer<typeof ToolInfo>;

// ---------------------------------------------------------------------------------------------
// executor.execute -> StepResult

/** One line of the ToolPerformanceLog: one attempt of one tool call (attempt 0: refused before any attempt). */
export const ToolPerformanceRecord = z.object({
  tool: ToolName,
  /** sha256 (hex) of the canonical JSON of the arguments; null when there were none to digest. */
  args_digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  latency_ms: z.number().nonnegative(),
  outcome: z.union([z.literal("ok"), ErrorCode]),
  attempt: z.number().int().min(0).max(L.maxToolAttempts),
  /** The dangerous patterns seen in the arguments (recorded, never enforced); absent when none. */
  flags: ToolFlags.min(1).optional(),
});
export type ToolPerformanceRecord = z.infer<typeof ToolPerformanceRecord>;

/** The result of one strategy for one plan step. */
export const StepResult = z
  .object({
    strategy: ExecutionStrategy,
    /** The tool actually run: the step's tool, `corpus_search` (rag) or `web_search` (web). */
    tool: ToolName,
    ok: z.boolean(),
    /** The tool's output as text (JSON or prose), clipped. */
    output: text(4000).nullable(),
    error: z.object({ code: ErrorCode, message: text(500), retryable: z.boolean() }).nullable(),
    latency_ms: z.number().nonnegative(),
    attempts: z.number().int().min(0).max(L.maxToolAttempts),
    records: z.array(ToolPerformanceRecord).max(L.maxToolAttempts),
    citations: z.array(Citation).max(10),
  })
  .refine((r) => (r.ok ? r.output !== null && r.error === null : r.error !== null), {
    message: "ok needs an output and no error; a failure needs its error",
    path: ["error"],
  });
export type StepResult = z.infer<typeof StepResult>;

/** Bounds the executor applies to one tool call. */
export const ExecutorLimits = z.object({
  max_attempts: z.number().int().min(1).max(L.maxToolAttempts),
  timeout_ms: z.number().int().min(L.minToolTimeoutMs).max(L.maxToolTimeoutMs),
});
export type ExecutorLimits = z.infer<typeof ExecutorLimits>;

/**
 * The session's tool policy, which the executor enforces on every call: the planner chooses only
 * among the tools it was shown (`listed`, from `executor.list_tools`) and never a tool the
 * session's memory banned. A plan naming anything else is refused before any attempt, so a
 * prompt that talks the planner into another tool gets no call.
 */
export const ToolPolicy = z.object({
  listed: z.array(ToolName).max(L.maxTools),
  banned: z.array(ToolName).max(L.maxBannedTools),
});
export type ToolPolicy = z.infer<typeof ToolPolicy>;

/** An accepted earlier step, for the summarize step. */
export const AcceptedResult = z.object({
  plan_version: z.number().int().min(1),
  step_index: Index,
  description: PlanStep.shape.description,
  tool: ToolName,
  strategy: ExecutionStrategy,
  output: text(2000),
  citations: z.array(Citation).max(5),
});
export type AcceptedResult = z.infer<typeof AcceptedResult>;

/** What the summarize step writes its answer from. */
export const SummarizeContext = z.object({
  results: z.array(AcceptedResult).max(L.maxPlanSteps - 1),
  retrieval: RetrievalBundle.nullable(),
  user_replies: z.array(line(L.queryMaxChars)).max(3),
});
export type SummarizeContext = z.infer<typeof SummarizeContext>;

// ---------------------------------------------------------------------------------------------
// critic.report -> CriticReport

export const CriticReport = z
  .object({
    quality: Probability,
    hallucination_risk: Probability,
    issues: z.array(line(300)).max(L.maxIssues),
    is_acceptable: z.boolean(),
    rewrite_suggestion: line(1000).nullable(),
    requires_human_input: z.boolean(),
    question_for_human: line(500).nullable(),
  })
  .refine((r) => !r.requires_human_input || r.question_for_human !== null, {
    message: "requires_human_input needs a question_for_human",
    path: ["question_for_human"],
  });
export type CriticReport = z.infer<typeof CriticReport>;

// ---------------------------------------------------------------------------------------------
// Requests

/** perception.perceive: the question itself, or a step result to analyse against the question. */
export const PerceiveRequest = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("query"), query: BlackboardQuery }),
  z.object({
    kind: z.literal("step_result"),
    query: BlackboardQuery,
    step_index: Index,
    step: PlanStep,
    result: StepResult,
  }),
]);
export type PerceiveRequest = z.infer<typeof PerceiveRequest>;

/** What memory.update folds into the memory it is given. */
export const MemoryEvent = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("perception"), snapshot: PerceptionSnapshot }),
  z.object({
    kind: z.literal("step"),
    step_index: Index,
    step: PlanStep,
    result: StepResult,
    critic: CriticReport.nullable(),
  }),
  z.object({ kind: z.literal("user_reply"), question_for_human: line(500), text: line(L.queryMaxChars) }),
]);
export type MemoryEvent = z.infer<typeof MemoryEvent>;

export const MemoryUpdateRequest = z.object({ question: BlackboardQuery, memory: MemoryState, event: MemoryEvent });
export type MemoryUpdateRequest = z.infer<typeof MemoryUpdateRequest>;

export const RetrieveRequest = z.object({
  query: RetrieverQuery,
  strategies: z
    .array(RetrievalSource)
    .min(1)
    .max(3)
    .refine((s) => new Set(s).size === s.length, "a strategy is listed twice"),
  /** The session memory, by value, for the memory strategy. */
  memory: MemoryState,
  max_items: z.number().int().min(1).max(L.maxRetrievedItems),
});
export type RetrieveRequest = z.infer<typeof RetrieveRequest>;

export const PlanRequest = z.object({
  question: BlackboardQuery,
  perception: PerceptionSnapshot,
  retrieval: RetrievalBundle.nullable(),
  memory: MemoryState,
  tools: z.array(ToolInfo).max(L.maxTools),
  /** The effective step limit (profile and ceiling); longer plans are cut to it, keeping `summarize`. */
  max_steps: z.number().int().min(1).max(L.maxPlanSteps),
  strategy_profile: StrategyProfile,
  /** For a rewrite: the plan being replaced, the step that went wrong and the critic's advice. */
  previous_plan: Plan.nullable(),
  failed_step_index: Index.nullable(),
  rewrite_suggestion: text(2000).nullable(),
});
export type PlanRequest = z.infer<typeof PlanRequest>;

export const ExecuteRequest = z
  .object({
    question: BlackboardQuery,
    step_index: Index,
    step: PlanStep,
    strategy: ExecutionStrategy,
    /** What `rag` and `web` search for; null for `tool`. */
    query: RetrieverQuery.nullable(),
    limits: ExecutorLimits,
    /** What the step's tool may be; the rag and web strategies' tools obey `banned` only. */
    policy: ToolPolicy,
    /** Only for the `summarize` step. */
    context: SummarizeContext.nullable(),
  })
  .refine((r) => r.strategy === "tool" || r.query !== null, { message: "rag and web need a query", path: ["query"] })
  .refine((r) => (r.step.tool === SUMMARIZE_TOOL) === (r.context !== null), {
    message: "the summarize step, and only it, carries a context",
    path: ["context"],
  });
export type ExecuteRequest = z.infer<typeof ExecuteRequest>;

export const ListToolsRequest = z.object({ max_tools: z.number().int().min(1).max(L.maxTools) });
export const ToolList = z.object({ tools: z.array(ToolInfo).max(L.maxTools) });
export type ToolList = z.infer<typeof ToolList>;

export const ReportRequest = z.object({
  question: BlackboardQuery,
  step_index: Index,
  step: PlanStep,
  /** True for the plan's last (summarize) step: its output is the final answer. */
  is_final_step: z.boolean(),
  result: StepResult,
  perception: PerceptionSnapshot.nullable(),
  retrieval: RetrievalBundle.nullable(),
});
export type ReportRequest = z.infer<typeof ReportRequest>;
