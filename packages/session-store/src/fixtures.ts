import type { CriticChainData, Outbox, SessionState, SessionStatus, TransitionLogLine } from "@agentmesh/contracts";
import type { CommitRequest } from "./types.js";

/** A valid critic-chain SessionState at `version`, for tests of anything that stores sessions. */
export function testSessionState(
  sessionId: string,
  version = 0,
  at = 1_700_000_000_000,
): SessionState & { data: CriticChainData } {
  return {
    meta: {
      session_id: sessionId,
      version,
      workflow: "critic-chain",
      workflow_version: 1,
      status: "running",
      awaiting: [],
      usage: { steps: version, model_calls: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0 },
      budgets: { max_steps: null, max_tokens: null, max_cost_usd: null, max_wall_ms: null },
      created_at: at,
      updated_at: at + version,
      deadline_at: null,
      error: null,
      paused_ms: 0,
      pause: null,
      owner: null,
      thread_id: null,
      trace: null,
    },
    data: {
      workflow: "critic-chain",
      question: "What is the boiling point of water at sea level?",
      current_step: "input",
      next_step: "planner",
      research_steps: [],
      expert_steps: [],
      current_research_index: -1,
      research_results: [],
      expert_answer: "",
      expert_reasoning: "",
      critic_planner_decision: null,
      critic_planner_feedback: null,
      critic_researcher_decision: null,
      critic_researcher_feedback: null,
      critic_expert_decision: null,
      critic_expert_feedback: null,
      retry_count: 0,
      retry_limit: 5,
      final_answer: null,
      final_reasoning_trace: null,
      error: null,
      error_component: null,
      messages: [],
      researcher_states: {},
      expert_state: null,
      tools_available: [],
      max_tool_rounds: 5,
      tool_calls: 0,
    },
  };
}

/** Extra parts of a test commit. */
export interface TestCommitOptions {
  readonly terminal?: boolean;
  readonly timers?: CommitRequest["timers"];
  readonly clearTimers?: readonly string[];
}

/**
 * The commit of a transition from `prev` applying `inputId`: version + 1, one stage event in the
 * outbox and a log line, as the coordinator would write them.
 */
export function testCommit(prev: SessionState, inputId: string, o: TestCommitOptions = {}): CommitRequest {
  const sid = prev.meta.session_id;
  const version = prev.meta.version + 1;
  const status: SessionStatus = o.terminal ? "completed" : "running";
  const at = prev.meta.updated_at + 1;
  const state: SessionState = {
    meta: {
      ...prev.meta,
      version,
      status,
      updated_at: at,
      usage: { ...prev.meta.usage, steps: prev.meta.usage.steps + 1 },
    },
    data:
      prev.data.workflow === "critic-chain"
        ? { ...prev.data, research_results: [...prev.data.research_results.slice(-19), `result of ${inputId}`] }
        : prev.data,
  };
  const outbox: Outbox = {
    version,
    entries: [
      {
        kind: "event",
        event: {
          v: 1,
          session_id: sid,
          version,
          index: 0,
          timestamp: at,
          type: "stage",
          name: "planner",
          status: "running",
          description: inputId,
        },
      },
    ],
  };
  const log: TransitionLogLine = {
    version,
    input_id: inputId,
    input: { kind: "test", id: inputId },
    now: at,
    commands: [`dispatch:${inputId}`],
    status,
  };
  return {
    sessionId: sid,
    expectedVersion: prev.meta.version,
    state,
    inputId,
    outbox,
    log,
    terminal: o.terminal ?? false,
    ...(o.timers ? { timers: o.timers } : {}),
    ...(o.clearTimers ? { clearTimers: o.clearTimers } : {}),
  };
}
