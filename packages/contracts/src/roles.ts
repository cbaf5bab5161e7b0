import { z } from "zod";
import { LIMITS } from "./limits.js";
import {
  CriticReport,
  ExecuteRequest,
  ListToolsRequest,
  MemoryState,
  MemoryUpdateRequest,
  PerceiveRequest,
  PerceptionSnapshot,
  Plan,
  PlanRequest,
  ReportRequest,
  RetrievalBundle,
  RetrieveRequest,
  StepResult,
  ToolList,
} from "./blackboard.js";
import {
  CapabilitiesRequest,
  CapabilitiesResult,
  McpAnswerRequest,
  RetrieverAnswerRequest,
  SpecialistAnswer,
  SpecialistRequest,
} from "./halo.js";
import { RoutingResult } from "./supervisor.js";
import { ExpertTurn, RejectedAnswer, RejectedPlan, ResearchTurn, ToolTurn } from "./critic-chain.js";
import {
  AskRequest,
  AskResult,
  DecideRequest,
  DecideResult,
  GatherRequest,
  GatherResult,
  SynthesizeRequest,
  SynthesizeResult,
} from "./clarify.js";
import {
  AgentAction,
  ChatRespondRequest,
  CodeGenerateRequest,
  CoderAction,
  DataCode,
  DataGenerateRequest,
  DataPlan,
  DataPlanRequest,
  DataSummarizeRequest,
  DataSummary,
  ResearchAnalysis,
  ResearchAnalyzeRequest,
  ResearchFinalizeRequest,
  ResearchReport,
  ResearchSearchRequest,
  ResearchSynthesis,
  ResearchSynthesizeRequest,
  RouteRequest,
  ToolCallOutcome,
  ToolCallRequest,
  WritingAnalysis,
  WritingAnalyzeRequest,
  WritingDraft,
  WritingFinal,
  WritingFinalizeRequest,
  WritingOutline,
  WritingOutlineRequest,
  WritingWriteRequest,
} from "./supervisor-ops.js";

const Text = z.string().max(LIMITS.maxTextChars);
const Steps = z.array(z.string().min(1).max(2000)).max(LIMITS.maxListItems);

/** The orchestrator message: what the coordinator tells an agent to do. */
export const OrchestratorMessage = z.object({
  sender: z.literal("orchestrator"),
  receiver: z.string().max(40),
  type: z.literal("instruction"),
  content: Text,
  step_id: z.number().int().nullable(),
});
export type OrchestratorMessage = z.infer<typeof OrchestratorMessage>;

/** A critic's verdict (`decision`, `feedback`). */
export const CriticVerdict = z.object({
  decision: z.enum(["approve", "reject"]),
  feedback: z.string().max(4000),
});
export type CriticVerdict = z.infer<typeof CriticVerdict>;

/** Defines one operation of a role: its request and response schemas, used by both sides. */
function op<Req extends z.ZodType, Res extends z.ZodType>(description: string, request: Req, response: Res) {
  return { description, request, response } as const;
}

/**
 * The role registry: role -> op -> request/response schemas. Agents serve these ops; the
 * coordinator sends them. Both validate against the same value.
 */
export const ROLES = {
  planner: {
    plan: op(
      "Develop a logical plan: research steps and expert steps",
      z.object({
        message: OrchestratorMessage,
        question: Text,
        feedback: z.string().max(4000).nullable(),
        /** The plan the critic rejected (a retry), handed back with its feedback. */
        rejected_plan: RejectedPlan.nullable().default(null),
      }),
      z.object({ research_steps: Steps, expert_steps: Steps.min(1) }),
    ),
    capabilities: op(
      "Pick the halo specialists a question needs: one json_object model call at temperature 0, never retried",
      CapabilitiesRequest,
      CapabilitiesResult,
    ),
  },
  critic: {
    review_plan: op(
      "Review a plan",
      z.object({ message: OrchestratorMessage, question: Text, research_steps: Steps, expert_steps: Steps }),
      CriticVerdict,
    ),
    review_research: op(
      "Review one research result",
      z.object({
        message: OrchestratorMessage,
        question: Text,
        research_step: z.string().max(2000),
        research_result: Text,
      }),
      CriticVerdict,
    ),
    review_answer: op(
      "Review the expert's answer",
      z.object({ message: OrchestratorMessage, question: Text, expert_answer: Text, expert_reasoning: Text }),
      CriticVerdict,
    ),
    report: op(
      "Score a blackboard step result: quality, hallucination risk, issues, acceptability, human escalation",
      ReportRequest,
      CriticReport,
    ),
  },
  researcher: {
    research: op(
      "Carry out one research step: report its result, or call one of the offered tools (the workflow runs it and asks again)",
      z.object({
        message: OrchestratorMessage,
        question: Text,
        research_step: z.string().max(2000),
        feedback: z.string().max(4000).nullable(),
        /** The result the critic rejected (a retry of this step), handed back with its feedback. */
        rejected_result: Text.nullable().default(null),
        ...ToolTurn,
      }),
      ResearchTurn,
    ),
    search: op(
      "The research agent's search_agent node: call a search tool, hand off, or end the search",
      ResearchSearchRequest,
      AgentAction,
    ),
    analyze: op(
      "The research agent's analyze node: read the sources for the scenario",
      ResearchAnalyzeRequest,
      ResearchAnalysis,
    ),
    synthesize: op(
      "The research agent's synthesize node (streamed): the findings, for the scenario",
      ResearchSynthesizeRequest,
      ResearchSynthesis,
    ),
    finalize: op(
      "The research agent's finalize node (streamed): the cited report",
      ResearchFinalizeRequest,
      ResearchReport,
    ),
    gather: op(
      "clarify's research agent: passages from the corpus, the web when configured and the conversation, each corpus and web one cited",
      GatherRequest,
      GatherResult,
    ),
  },
  expert: {
    answer: op(
      "Answer the question from the plan and the research, or call one of the offered tools (the workflow runs it and asks again)",
      z.object({
        message: OrchestratorMessage,
        question: Text,
        expert_steps: Steps,
        research_steps: Steps,
        research_results: z.array(Text).max(LIMITS.maxListItems),
        feedback: z.string().max(4000).nullable(),
        /** The answer and reasoning the critic rejected (a retry), handed back with its feedback. */
        rejected_answer: RejectedAnswer.nullable().default(null),
        ...ToolTurn,
      }),
      ExpertTurn,
    ),
  },
  finalizer: {
    finalize: op(
      "Write the final answer and reasoning trace",
      z.object({
        message: OrchestratorMessage,
        question: Text,
        expert_answer: Text,
        expert_reasoning: Text,
        research_results: z.array(Text).max(LIMITS.maxListItems),
        error: z.string().max(4000).nullable(),
        error_component: z.string().max(100).nullable(),
        /** The researcher's and the expert's tool calls and what came of them, one line each, oldest first, for the trace. */
        tool_calls: z.array(z.string().max(500)).max(40).default([]),
      }),
      z.object({ final_answer: Text, final_reasoning_trace: Text }),
    ),
  },
  perception: {
    perceive: op(
      "Extract entities, intent, constraints and sub-goals from the query or a step result",
      PerceiveRequest,
      PerceptionSnapshot,
    ),
  },
  memory: {
    update: op(
      "Fold a perception, a step outcome or a person's reply into the memory given by value",
      MemoryUpdateRequest,
      MemoryState,
    ),
  },
  retriever: {
    retrieve: op("Retrieve context from session memory, the corpus and the web", RetrieveRequest, RetrievalBundle),
    answer: op(
      "Answer from the corpus (halo's rag) or the web (halo's web), citing the passages or pages used",
      RetrieverAnswerRequest,
      SpecialistAnswer,
    ),
  },
  decision: {
    plan: op("Plan (or rewrite) a bounded list of tool steps ending in summarize", PlanRequest, Plan),
  },
  executor: {
    execute: op(
      "Run one plan step with one strategy (tool, rag, web) under the safe executor",
      ExecuteRequest,
      StepResult,
    ),
    list_tools: op("List the tools the executor can run, for the planner", ListToolsRequest, ToolList),
    call: op(
      "Run one tool call (code runs included) under the safe executor, allowed only among the caller's tools",
      ToolCallRequest,
      ToolCallOutcome,
    ),
  },
  graph: {
    answer: op(
      "Answer from the knowledge graph of triples, citing each triple used by its source",
      SpecialistRequest,
      SpecialistAnswer,
    ),
  },
  mcp: {
    answer: op(
      "Answer through the MCP server named in the task: pick one of its tools, call it, cite its links and resources",
      McpAnswerRequest,
      SpecialistAnswer,
    ),
  },
  chat: {
    chitchat: op("Small talk: greet, thank, say what the system can do", SpecialistRequest, SpecialistAnswer),
    respond: op(
      "The supervisor's chat agent node (streamed): answer, call a tool or hand off",
      ChatRespondRequest,
      AgentAction,
    ),
  },
  router: {
    route: op(
      "Pick the supervisor's agent for a query: {agent, confidence, reason} (fast tier)",
      RouteRequest,
      RoutingResult,
    ),
  },
  coder: {
    generate: op(
      "The code agent's generate node: code to run in the sandbox (fixing the last run's error), a handoff, or an answer",
      CodeGenerateRequest,
      CoderAction,
    ),
  },
  writer: {
    analyze: op(
      "The writing agent's analyze node: type, tone, audience and key points, or a handoff to research",
      WritingAnalyzeRequest,
      WritingAnalysis,
    ),
    outline: op("The writing agent's outline node", WritingOutlineRequest, WritingOutline),
    write: op("The writing agent's write node (streamed): the draft", WritingWriteRequest, WritingDraft),
    finalize: op("The writing agent's finalize node (streamed): the final text", WritingFinalizeRequest, WritingFinal),
    synthesize: op(
      "clarify's synthesis agent (streamed): the answer from the gathered passages, citing them as [n]",
      SynthesizeRequest,
      SynthesizeResult,
    ),
  },
  analyst: {
    plan: op(
      "The data agent's plan node: the analysis plan and whether to chart, or a handoff to code",
      DataPlanRequest,
      DataPlan,
    ),
    generate: op(
      "The data agent's generate node: Python (standard library) over DATA_TEXT, and a chart spec without data",
      DataGenerateRequest,
      DataCode,
    ),
    summarize: op("The data agent's summarize node (streamed): what the run found", DataSummarizeRequest, DataSummary),
  },
  orchestrator: {
    decide: op(
      "clarify's Layer 3: CLARIFICATION or RESEARCH for the latest message, as free text (prompt agent_orchestrator, temperature 0.3)",
      DecideRequest,
      DecideResult,
    ),
  },
  clarifier: {
    ask: op(
      "clarify's clarification agent: one question that resolves what the latest message leaves open",
      AskRequest,
      AskResult,
    ),
  },
} as const;

export type Roles = typeof ROLES;
export type RoleName = keyof Roles;
export type OpName<R extends RoleName> = keyof Roles[R] & string;
export type OpRequest<R extends RoleName, O extends OpName<R>> = Roles[R][O] extends {
  request: infer S extends z.ZodType;
}
  ? z.infer<S>
  : never;
export type OpResponse<R extends RoleName, O extends OpName<R>> = Roles[R][O] extends {
  response: infer S extends z.ZodType;
}
  ? z.infer<S>
  : never;

export const RoleName = z.enum(Object.keys(ROLES) as [RoleName, ...RoleName[]]);
export const ROLE_NAMES = RoleName.options;
