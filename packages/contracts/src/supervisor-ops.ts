import { z } from "zod";
import { LIMITS } from "./limits.js";
import { ErrorCode } from "./errors.js";
import { BLACKBOARD_LIMITS, ToolName, ExecutorLimits } from "./blackboard.js";
import { HaloCitation } from "./halo.js";
import { Conversation } from "./messages.js";
import { ResearchScenario } from "./workflows.js";
import { CodeLanguage, ResearchDepth, RESEARCH_DEPTHS, SUPERVISOR_LIMITS, VegaLiteSpec } from "./supervisor.js";

/**
 * The supervisor's ops: what the workflow sends each agent's role and what comes back.
 * Every node of the agents' graphs is one op (one task in the transition log); every tool call,
 * code run included, is an `executor.call` task the workflow dispatches, never a loop inside a task.
 */

const nonBlank = (max: number, what: string) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim().length > 0, `${what} needs some text`);
const Text = z.string().max(LIMITS.maxTextChars);
const JsonObject = z.record(z.string(), z.unknown());

/** The most tool observations one agent turn carries back to its model (the latest kept). */
export const MAX_OBSERVATIONS = 12;
/** The most tools offered to an agent in one turn (its own tools and its handoff tools). */
export const MAX_OFFERED_TOOLS = 24;
/** The code tools: what the code and data agents' code runs in (the sandbox). */
export const CODE_TOOL: Readonly<Record<CodeLanguage, "run_python" | "run_js">> = {
  python: "run_python",
  javascript: "run_js",
};

/**
 * What every agent op gets: the user's query, the task it was given (the query itself, or the
 * task a handoff delegated), the handoff's context, and the shared notes already rendered within
 * the 8000-character budget (empty when nothing is shared yet).
 */
export const AgentBrief = z.object({
  query: z.string().min(1).max(LIMITS.queryMaxChars),
  task: z.string().min(1).max(LIMITS.queryMaxChars),
  handoff_context: z.string().max(SUPERVISOR_LIMITS.maxHandoffContextChars).nullable(),
  /** The shared notes, rendered (labels included) within `SUPERVISOR_LIMITS.notesBudgetChars`. */
  memory: z.string().max(SUPERVISOR_LIMITS.notesBudgetChars),
});
export type AgentBrief = z.infer<typeof AgentBrief>;

/** A tool an agent may call this turn: its own tools and its `handoff_to_<target>` tools. */
export const OfferedTool = z.object({ name: z.string().min(1).max(80), description: z.string().max(1000) });
export type OfferedTool = z.infer<typeof OfferedTool>;

/** One tool call an agent made this turn and what came of it (a refused handoff included), oldest first. */
export const ToolObservation = z.object({
  tool: z.string().min(1).max(80),
  arguments: JsonObject,
  ok: z.boolean(),
  /** The result (or the refusal, or the error) as text. */
  content: z.string().max(4000),
});
export type ToolObservation = z.infer<typeof ToolObservation>;

const Observations = z.array(ToolObservation).max(MAX_OBSERVATIONS);
const Tools = z.array(OfferedTool).max(MAX_OFFERED_TOOLS);

/** An agent's next move: answer, or call one of the tools it was offered (a `handoff_to_<target>` tool included). */
export const AgentAction = z.discriminatedUnion("action", [
  z.object({ action: z.literal("answer"), text: nonBlank(LIMITS.maxTextChars, "an answer") }),
  z.object({ action: z.literal("tool"), tool: z.string().min(1).max(80), arguments: JsonObject }),
]);
export type AgentAction = z.infer<typeof AgentAction>;

// router.route -> RoutingResult (supervisor.ts)

export const RouteRequest = z.object({ query: z.string().min(1).max(LIMITS.queryMaxChars), messages: Conversation });
export type RouteRequest = z.infer<typeof RouteRequest>;

// chat.respond -> AgentAction: the `agent ⇄ tools` loop, one `agent` node per task.

export const ChatRespondRequest = z.object({
  brief: AgentBrief,
  /** The conversation's earlier turns. */
  messages: Conversation,
  tools: Tools,
  observations: Observations,
  /** Tool rounds left (of `SUPERVISOR_LIMITS.chatMaxToolIterations`); at 0 the agent must answer. */
  tool_rounds_left: z.number().int().min(0).max(SUPERVISOR_LIMITS.chatMaxToolIterations),
});
export type ChatRespondRequest = z.infer<typeof ChatRespondRequest>;

// researcher.search -> AgentAction: the `search_agent ⇄ search_tools` loop; `answer` ends the search (its text: what was found).

export const ResearchSearchRequest = z.object({
  brief: AgentBrief,
  scenario: ResearchScenario,
  depth: ResearchDepth,
  tools: Tools,
  observations: Observations,
  /** Search rounds left (of the depth's iterations); at 0 the agent must end the search. */
  search_rounds_left: z.number().int().min(0).max(RESEARCH_DEPTHS.deep.searchIterations),
  /** Sources kept so far (at most the depth's `sourcesKept`). */
  sources: z.array(HaloCitation).max(RESEARCH_DEPTHS.deep.sourcesKept),
});
export type ResearchSearchRequest = z.infer<typeof ResearchSearchRequest>;

/** What the research pipeline's later nodes get: the search's sources and notes. */
const ResearchMaterial = {
  brief: AgentBrief,
  scenario: ResearchScenario,
  sources: z.array(HaloCitation).max(RESEARCH_DEPTHS.deep.sourcesKept),
  /** The search results as text (the tool observations' content), oldest first. */
  notes: z.array(z.string().max(4000)).max(MAX_OBSERVATIONS),
};

export const ResearchAnalyzeRequest = z.object(ResearchMaterial);
export type ResearchAnalyzeRequest = z.infer<typeof ResearchAnalyzeRequest>;
export const ResearchAnalysis = z.object({ analysis: nonBlank(LIMITS.maxTextChars, "an analysis") });
export type ResearchAnalysis = z.infer<typeof ResearchAnalysis>;

export const ResearchSynthesizeRequest = z.object({ ...ResearchMaterial, analysis: Text });
export type ResearchSynthesizeRequest = z.infer<typeof ResearchSynthesizeRequest>;
export const ResearchSynthesis = z.object({ synthesis: nonBlank(LIMITS.maxTextChars, "a synthesis") });
export type ResearchSynthesis = z.infer<typeof ResearchSynthesis>;

export const ResearchFinalizeRequest = z.object({ ...ResearchMaterial, synthesis: Text });
export type ResearchFinalizeRequest = z.infer<typeof ResearchFinalizeRequest>;
/** The research report, citing its sources as [n] in the order of `sources`. */
export const ResearchReport = z.object({ response: nonBlank(LIMITS.maxTextChars, "a report") });
export type ResearchReport = z.infer<typeof ResearchReport>;

// coder.generate -> CoderAction: the `generate_code` node; the executor runs the code (`execute`).

/** One earlier `generate → execute` round, for the next generation to fix. */
export const CodeAttempt = z.object({
  language: CodeLanguage,
  code: z.string().max(LIMITS.maxCodeChars),
  /** 0 ran to its end, 1 raised, null a limit stopped it (the `code_result` event's value). */
  exit_code: z.number().int().nullable(),
  stdout: z.string().max(LIMITS.maxCodeOutputChars),
  stderr: z.string().max(LIMITS.maxCodeOutputChars),
  /** The exception or the limit, as text; null when it ran cleanly. */
  error: z.string().max(2000).nullable(),
  /** The value of the last expression, as text (JSON for JavaScript, repr for Python); absent or null when none. */
  result: z.string().max(2000).nullable().optional(),
});
export type CodeAttempt = z.infer<typeof CodeAttempt>;

/** Why a failed run failed, in one text: its error, else its stderr, else its exit code. */
export const codeFailure = (a: CodeAttempt): string =>
  a.error ?? (a.stderr.trim() || `exit code ${a.exit_code ?? "none"}`);

export const CodeGenerateRequest = z.object({
  brief: AgentBrief,
  /** Its handoff tools (the code agent's only tools besides the sandbox the workflow runs its code in). */
  tools: Tools,
  /** Its earlier tool calls this turn: a refused handoff, so it knows to go on itself. */
  observations: Observations,
  /** Earlier rounds, oldest first (at most `SUPERVISOR_LIMITS.codeMaxIterations - 1`). */
  attempts: z.array(CodeAttempt).max(SUPERVISOR_LIMITS.codeMaxIterations),
  /** Rounds left including this one. */
  rounds_left: z.number().int().min(1).max(SUPERVISOR_LIMITS.codeMaxIterations),
});
export type CodeGenerateRequest = z.infer<typeof CodeGenerateRequest>;

/** The code agent's move: code to run, a tool (a handoff), or an answer that needs no code run. */
export const CoderAction = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("code"),
    language: CodeLanguage,
    code: nonBlank(LIMITS.maxCodeChars, "code"),
    /** One or two sentences on what the code does. */
    explanation: z.string().max(2000),
  }),
  ...AgentAction.options,
]);
export type CoderAction = z.infer<typeof CoderAction>;

// writer: the nodes `analyze → outline → write → finalize`.

export const WritingAnalyzeRequest = z.object({ brief: AgentBrief, tools: Tools, observations: Observations });
export type WritingAnalyzeRequest = z.infer<typeof WritingAnalyzeRequest>;

/** The writing agent's reading of the task (the WritingState: `writing_type`, `tone`). */
export const WritingBrief = z.object({
  writing_type: z.string().min(1).max(80),
  tone: z.string().min(1).max(80),
  audience: z.string().max(200),
  key_points: z.array(z.string().min(1).max(500)).max(LIMITS.maxListItems),
});
export type WritingBrief = z.infer<typeof WritingBrief>;

/** analyze's answer: the writing brief, or a tool call (a handoff to research for facts the draft needs). */
export const WritingAnalysis = z.discriminatedUnion("action", [
  z.object({ action: z.literal("brief"), ...WritingBrief.shape }),
  AgentAction.options[1],
]);
export type WritingAnalysis = z.infer<typeof WritingAnalysis>;

export const WritingOutlineRequest = z.object({ brief: AgentBrief, writing: WritingBrief });
export type WritingOutlineRequest = z.infer<typeof WritingOutlineRequest>;
export const WritingOutline = z.object({ outline: nonBlank(LIMITS.maxTextChars, "an outline") });
export type WritingOutline = z.infer<typeof WritingOutline>;

export const WritingWriteRequest = z.object({ brief: AgentBrief, writing: WritingBrief, outline: Text });
export type WritingWriteRequest = z.infer<typeof WritingWriteRequest>;
export const WritingDraft = z.object({ draft: nonBlank(LIMITS.maxTextChars, "a draft") });
export type WritingDraft = z.infer<typeof WritingDraft>;

export const WritingFinalizeRequest = z.object({ brief: AgentBrief, writing: WritingBrief, draft: Text });
export type WritingFinalizeRequest = z.infer<typeof WritingFinalizeRequest>;
export const WritingFinal = z.object({ final_content: nonBlank(LIMITS.maxTextChars, "the final text") });
export type WritingFinal = z.infer<typeof WritingFinal>;

// analyst: the nodes `plan → generate → execute → summarize` over data from an attachment, the query or the thread.

/** The data the data agent works on, found by the workflow in an attachment, the query or the thread (CSV or JSON). */
export const DataInput = z.object({
  format: z.enum(["csv", "json"]),
  /** The data as given (at most 100,000 characters). */
  text: z.string().min(1).max(LIMITS.maxDataChars),
  /** Where it was found. */
  origin: z.enum(["attachment", "query", "thread"]),
  /** The attachment's file name (origin `attachment` only). */
  name: z.string().min(1).max(200).optional(),
  /** CSV: the header's column names; JSON: the first record's keys (at most 50). */
  columns: z.array(z.string().max(200)).max(50),
  /** Data rows (CSV lines after the header, JSON array items). */
  rows: z.number().int().nonnegative(),
});
export type DataInput = z.infer<typeof DataInput>;

/** The name of the Python variable holding the data's text, which the workflow defines before the analyst's code runs. */
export const DATA_VARIABLE = "DATA_TEXT";

export const DataPlanRequest = z.object({
  brief: AgentBrief,
  data: DataInput.nullable(),
  tools: Tools,
  observations: Observations,
});
export type DataPlanRequest = z.infer<typeof DataPlanRequest>;
/** plan's answer: the analysis plan (and whether a chart helps), or a tool call (a handoff to code). */
export const DataPlan = z.discriminatedUnion("action", [
  z.object({ action: z.literal("plan"), analysis_plan: nonBlank(4000, "a plan"), chart: z.boolean() }),
  AgentAction.options[1],
]);
export type DataPlan = z.infer<typeof DataPlan>;

export const DataGenerateRequest = z.object({
  brief: AgentBrief,
  data: DataInput.nullable(),
  analysis_plan: z.string().max(4000),
  chart: z.boolean(),
  attempts: z.array(CodeAttempt).max(SUPERVISOR_LIMITS.codeMaxIterations),
  rounds_left: z.number().int().min(1).max(SUPERVISOR_LIMITS.codeMaxIterations),
});
export type DataGenerateRequest = z.infer<typeof DataGenerateRequest>;

/**
 * The analyst's code (Python, standard library only; the data is in `DATA_TEXT`). It prints its
 * results; when a chart was planned its last stdout line is a JSON array of records, which the
 * workflow puts inline into `chart` (a Vega-Lite spec without data) for the `visualization` event.
 */
export const DataCode = z.object({
  code: nonBlank(LIMITS.maxCodeChars, "code"),
  chart: VegaLiteSpec.nullable(),
});
export type DataCode = z.infer<typeof DataCode>;

export const DataSummarizeRequest = z.object({
  brief: AgentBrief,
  analysis_plan: z.string().max(4000),
  execution: CodeAttempt,
  /** True when a chart was sent as a `visualization` event. */
  charted: z.boolean(),
});
export type DataSummarizeRequest = z.infer<typeof DataSummarizeRequest>;
export const DataSummary = z.object({ summary: nonBlank(LIMITS.maxTextChars, "a summary") });
export type DataSummary = z.infer<typeof DataSummary>;

// executor.call -> ToolCallOutcome: one tool call of the supervisor (or any workflow) under the safe executor.

/** The longest one executor.call attempt may run (ms): a sandboxed code run gets 60 s, a search 30 s (blackboard's steps keep their own 5 s bound). */
export const MAX_TOOL_CALL_TIMEOUT_MS = 60_000;

/** An executor.call's attempts and per-attempt timeout. */
export const ToolCallLimits = z.object({
  max_attempts: ExecutorLimits.shape.max_attempts,
  timeout_ms: z.number().int().min(BLACKBOARD_LIMITS.minToolTimeoutMs).max(MAX_TOOL_CALL_TIMEOUT_MS),
});
export type ToolCallLimits = z.infer<typeof ToolCallLimits>;

export const ToolCallRequest = z.object({
  tool: ToolName,
  arguments: JsonObject,
  /** The tools this call may be (the agent's own): anything else is refused before any attempt. */
  allowed: z.array(ToolName).min(1).max(MAX_OFFERED_TOOLS),
  limits: ToolCallLimits,
});
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;

/** A code tool's run, as the sandbox reported it (run_python, run_js). */
export const CodeRun = z.object({
  language: CodeLanguage,
  /** 0 ran to its end, 1 raised, null a limit stopped it. */
  exit_code: z.number().int().nullable(),
  stdout: z.string().max(LIMITS.maxCodeOutputChars),
  stderr: z.string().max(LIMITS.maxCodeOutputChars),
  result: z.string().max(2000).nullable(),
  error: z.string().max(2000).nullable(),
  truncated: z.boolean(),
  duration_ms: z.number().nonnegative(),
});
export type CodeRun = z.infer<typeof CodeRun>;

/** What one tool call came to: its output as text, the sources it carries, and a code tool's run. A tool's failure is `ok: false`, not a task failure. */
export const ToolCallOutcome = z
  .object({
    tool: ToolName,
    ok: z.boolean(),
    /** The output (or the failure) as text, at most 4000 characters. */
    content: z.string().max(4000),
    error: z.object({ code: ErrorCode, message: z.string().max(500), retryable: z.boolean() }).nullable(),
    latency_ms: z.number().nonnegative(),
    attempts: z.number().int().nonnegative(),
    citations: z.array(HaloCitation).max(RESEARCH_DEPTHS.deep.sourcesKept),
    /** Set for run_python and run_js, also when the code raised or a limit stopped it. */
    code: CodeRun.nullable(),
  })
  .refine((o) => o.ok === (o.error === null), { message: "ok has no error; a failure has its error", path: ["error"] });
export type ToolCallOutcome = z.infer<typeof ToolCallOutcome>;
