import {
  AgentmeshError,
  CODE_TOOL,
  codeFailure,
  HandoffArgs,
  LIMITS,
  MAX_OBSERVATIONS,
  OPS,
  RESEARCH_DEPTHS,
  SUPERVISOR_LIMITS,
  boundConversation,
  formatZodError,
  handoffSummary,
  type CodeAttempt,
  type CoderAction,
  type DataCode,
  type EventDraft,
  type HaloCitation,
  type HandoffInfo,
  type RoutingDecision,
  type SupervisorAgent,
  type SupervisorData,
  type ToolCallOutcome,
  type ToolObservation,
  type WireError,
} from "@agentmesh/contracts";
import { COULD_NOT_ANSWER, clip } from "./critic-chain-messages.js";
import { boundedArgs, stage, toolResult } from "./events.js";
import { attemptOf, chartOf, codeAnswer } from "./supervisor-code.js";
import { attachmentData, findDataInput } from "./supervisor-data-input.js";
import { decideHandoff, handoffTarget, refusedHandoffEvent } from "./supervisor-handoff.js";
import {
  AFTER_TOOLS,
  FIRST_NODE,
  FRESH_SCRATCH,
  TOOL_NODE,
  agentOf,
  agentSettings,
  chatRoundsLeft,
  codeRoundsLeft,
  isToolNode,
  nodeOp,
  nodeTask,
  notes,
  runnableCode,
  searchRoundsLeft,
  tools,
  withArtifacts,
} from "./supervisor-nodes.js";
import { routingDecision } from "./supervisor-routing.js";
import { MINIMAL_SUPERVISOR_SETTINGS, ownTools } from "./supervisor-tools.js";
import { isResultOf } from "./ops.js";
import type { Control, ResultInput, WorkflowDefinition, WorkflowInput } from "./types.js";

type Decided = { readonly data: SupervisorData; readonly control: Control; readonly events: readonly EventDraft[] };
type TaskInput = Extract<WorkflowInput, { kind: "result" | "failure" }>;
type D = SupervisorData;

/** Refused tool calls one agent may make before it is stopped (each is answered by asking its node again). */
export const MAX_REFUSALS = 3;
/** Times an agent node runs again after a retryable failure (a deadline, an invalid output) before the session ends. */
const AGENT_RETRIES = 1;
/** The final answer's bound: a composed code answer holds the code and its output. */
const RESPONSE_MAX = LIMITS.maxTextChars * 2;
const OBSERVATION_MAX = 4000;
const TRACE_MAX = 20_000;

/** How to get a language model, said whenever an agent's op needs one and the deployment has none. */
const MODEL_HINT =
  "To give agentmesh a language model, set AGENTMESH_LLM_BASE_URL to an OpenAI-compatible endpoint (and AGENTMESH_LLM_API_KEY if it needs a key), then restart it.";

/** Runs the current node (again, for a retry). */
function next(d: D, events: EventDraft[], attempt = 0): Decided {
  const task = nodeTask(d, attempt);
  if (task === null) return internal(d, `the ${d.node} node has no task for the ${d.active_agent ?? "unrouted"} agent`);
  return { data: d, control: { kind: "dispatch", tasks: [task] }, events };
}

/** A line of the reasoning trace, the latest 40 kept. */
const noted = (d: D, line: string): D => ({ ...d, notes: [...d.notes, clip(line, 500)].slice(-40) });

/** The session's data once it ended on an error: done, nothing pending, the answer, and the error and where it arose. */
const endedOnError = (d: D, answer: string, message: string, component: string): D => ({
  ...d,
  node: "done",
  pending_call: null,
  response: answer,
  error: clip(message, 4000),
  error_component: component,
});

/** A fault of ours: an input the runtime should never have passed on, or data a node lacks. */
function internal(data: D, message: string): Decided {
  const error = new AgentmeshError("internal", `supervisor: ${message}`, { component: "supervisor" }).toWire();
  const answer = `${COULD_NOT_ANSWER} (an internal error stopped the session)`;
  const ended = endedOnError(data, answer, error.message, "supervisor");
  return {
    data: ended,
    control: { kind: "fail", error, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) },
    events: [],
  };
}

/** The session's answer given: the agent's artifacts go into the shared notes and the session completes. */
function complete(d: D, response: string, events: EventDraft[]): Decided {
  const answer = clip(response, RESPONSE_MAX);
  const done: D = { ...d, shared_memory: withArtifacts(d), node: "done", pending_call: null, response: answer };
  return {
    data: done,
    control: { kind: "complete", final_answer: answer, final_reasoning_trace: reasoningTrace(done) },
    events,
  };
}

/**
 * Starts `agent` on its first node with fresh scratch (after routing or a handoff). An attachment's
 * data stays in `data_input` for the whole session (kept once, not copied beside it), and the data
 * agent takes it before any data in the task, the query or the thread.
 */
function startAgent(data: D, agent: SupervisorAgent, events: EventDraft[]): Decided {
  const attached = data.data_input?.origin === "attachment" ? data.data_input : null;
  const fresh: D = {
    ...data,
    ...FRESH_SCRATCH,
    data_input: attached,
    observations: [],
    sources: [],
    code_attempts: [],
    active_agent: agent,
    visited_agents: [...data.visited_agents, agent],
    node: FIRST_NODE[agent],
  };
  const d =
    agent === "data"
      ? {
          ...fresh,
          data_input: findDataInput([fresh.delegated_task ?? fresh.query, fresh.query], fresh.messages, attached),
        }
      : fresh;
  events.push({ type: "config", agent, settings: agentSettings(d, agent) });
  return next(d, events);
}

/** The routing decision kept in the session's fields and announced, then its agent started. */
function route(data: D, decision: RoutingDecision, events: EventDraft[]): Decided {
  const routed: D = {
    ...data,
    selected_agent: decision.agent,
    routing_reason: decision.reason,
    routing_confidence: decision.confidence,
    is_low_confidence: decision.is_low_confidence,
  };
  events.push({ type: "routing", ...decision });
  return startAgent(routed, decision.agent, events);
}

/** An accepted handoff: recorded, announced, the source's work shared, and the target started on the delegated task (no router). */
function handoff(d: D, h: HandoffInfo, events: EventDraft[]): Decided {
  events.push(stage(d.node, "completed", `The ${h.source_agent} agent hands off to the ${h.target_agent} agent`));
  events.push({ type: "handoff", ...h });
  const moved: D = {
    ...d,
    shared_memory: withArtifacts(d),
    handoff_history: [...d.handoff_history, h],
    handoff_count: d.handoff_count + 1,
    handoff_summary: handoffSummary([...d.handoff_history, h]),
    pending_handoff: null,
    delegated_task: h.task_description,
    handoff_context: h.context,
  };
  return startAgent(
    noted(moved, `Handoff ${h.source_agent} → ${h.target_agent}: ${h.task_description}`),
    h.target_agent,
    events,
  );
}

/** The last successful tool result, for an answer given when an agent ran out of turns. */
const lastFound = (d: D): string | null => notes(d).at(-1) ?? null;

/** Ends an agent that will not finish (out of tool rounds, or refused too often) with the most it honestly has. */
function stopAgent(d: D, why: string, events: EventDraft[]): Decided {
  events.push(stage(d.node, "failed", why));
  const found = lastFound(d);
  const answer = found
    ? `The ${agentOf(d)} agent stopped without a final answer: ${why}. The last tool result it had:\n\n${found}`
    : `${COULD_NOT_ANSWER} The ${agentOf(d)} agent stopped: ${why}.`;
  return complete(noted(d, `Stopped: ${why}`), answer, events);
}

const observe = (d: D, o: ToolObservation): D => ({
  ...d,
  observations: [...d.observations, o].slice(-MAX_OBSERVATIONS),
});

/** A tool call the agent may not make: it is told why (as the tool's result) and its node is asked again, a bounded number of times. */
function refuse(d: D, tool: string, args: Record<string, unknown>, message: string, events: EventDraft[]): Decided {
  const told = observe(d, {
    tool: clip(tool, 80),
    arguments: boundedArgs(args).args,
    ok: false,
    content: clip(message, OBSERVATION_MAX),
  });
  const counted = noted({ ...told, refusals: d.refusals + 1 }, `Refused ${tool}: ${message}`);
  if (counted.refusals > MAX_REFUSALS)
    return stopAgent(counted, `it asked for ${counted.refusals} tool calls it may not make`, events);
  return next(counted, events);
}

/** An agent's tool action: a handoff (decided by the handoff rules), one of its own tools, or a refusal. */
function onTool(d: D, tool: string, args: Record<string, unknown>, events: EventDraft[]): Decided {
  const agent = agentOf(d);
  const target = handoffTarget(tool);
  if (target !== null) {
    const parsed = HandoffArgs.safeParse(args);
    if (!parsed.success)
      return refuse(
        d,
        tool,
        args,
        `The handoff was not made: its arguments are invalid (${formatZodError(parsed.error, 300)}).`,
        events,
      );
    const decision = decideHandoff({ current: agent, target, args: parsed.data, history: d.handoff_history });
    if (decision.outcome === "accepted") return handoff(d, decision.handoff, events);
    events.push(refusedHandoffEvent(agent, target, decision));
    return refuse(d, tool, args, decision.message, events);
  }
  const toolNode = TOOL_NODE[d.node];
  const own = ownTools(agent, d.tools_available);
  if (toolNode === undefined || !own.includes(tool)) {
    const offered = tools(d).map((t) => t.name);
    return refuse(
      d,
      tool,
      args,
      `The tool "${tool}" is not one you were offered (${offered.join(", ") || "none"}). Use an offered tool or answer.`,
      events,
    );
  }
  const left = d.node === "agent" ? chatRoundsLeft(d) : searchRoundsLeft(d);
  if (left === 0) {
    if (d.node === "search_agent") {
      // The search is over: the research pipeline goes on with what it found.
      events.push(
        stage(d.node, "completed", "The search rounds are used up; the research goes on with what was found"),
      );
      return next(
        noted(
          { ...d, node: "analyze" },
          `The search ended at its ${RESEARCH_DEPTHS[d.depth].searchIterations} round(s)`,
        ),
        events,
      );
    }
    return stopAgent(
      d,
      `it used its ${SUPERVISOR_LIMITS.chatMaxToolIterations} tool rounds and asked for another`,
      events,
    );
  }
  events.push(stage(d.node, "completed", `The ${agent} agent calls ${tool}`));
  return next(withCall(d, tool, args, toolNode), events);
}

/** Sources added without repeats (by url, else path) up to the depth's limit; each new one announced. */
function addSources(d: D, citations: readonly HaloCitation[], events: EventDraft[]): D {
  const keep = RESEARCH_DEPTHS[d.depth].sourcesKept;
  const key = (c: HaloCitation) => c.url ?? c.path ?? "";
  const seen = new Set(d.sources.map(key));
  const sources = [...d.sources];
  for (const c of citations) {
    if (sources.length >= keep) break;
    if (seen.has(key(c))) continue;
    seen.add(key(c));
    sources.push(c);
    events.push({ type: "source", ...c });
  }
  return { ...d, sources };
}

/**
 * A `code_result`'s stderr: the run's stderr followed by the exception or the limit that stopped
 * it, as an interpreter prints a traceback last, so a client sees why the code failed.
 */
function eventStderr(run: NonNullable<ToolCallOutcome["code"]>): string {
  if (run.error === null || run.stderr.includes(run.error)) return run.stderr;
  return run.stderr === "" ? run.error : `${run.stderr.replace(/\n?$/, "\n")}${run.error}`;
}

/** The end of a text that is over `max` characters (a traceback's last lines say most), marked as cut. */
const clipStart = (text: string, max: number): string =>
  text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;

/** A code run came back: announce it, then done, another round, or an honest give-up after the last. */
function onCodeRun(d: D, outcome: ToolCallOutcome, callId: string, events: EventDraft[]): Decided {
  if (d.code === null) return internal(d, "a code run came back with no code pending");
  const attempt = attemptOf(d.code, outcome);
  const run = outcome.code;
  if (run !== null) {
    const max = LIMITS.maxCodeOutputChars;
    const stderr = eventStderr(run);
    const truncated = run.truncated || run.stdout.length > max || stderr.length > max;
    events.push({
      type: "code_result",
      id: callId,
      language: run.language,
      exit_code: run.exit_code,
      stdout: clip(run.stdout, max),
      stderr: clipStart(stderr, max),
      result: run.result,
      truncated,
      duration_ms: run.duration_ms,
    });
  }
  const code = d.code;
  const ran: D = {
    ...d,
    code_attempts: [...d.code_attempts, attempt].slice(-SUPERVISOR_LIMITS.codeMaxIterations),
    pending_call: null,
  };
  if (outcome.ok && attempt.exit_code === 0 && attempt.error === null) {
    events.push(stage("execute", "completed", `The code ran (attempt ${ran.code_attempts.length})`));
    if (d.active_agent === "code") return complete(ran, codeAnswer(code.explanation, attempt), events);
    return chartThenSummarize(ran, code.chart, attempt, events);
  }
  events.push(
    stage("execute", "failed", `The code failed (attempt ${ran.code_attempts.length}): ${codeFailure(attempt)}`),
  );
  if (codeRoundsLeft(ran) > 0) return next({ ...ran, code: null, node: "generate" }, events);
  const rounds = SUPERVISOR_LIMITS.codeMaxIterations;
  const what = d.active_agent === "data" ? "The data analysis code" : "The code";
  const answer = `${what} still fails after ${rounds} attempts. The last error:\n\n${codeFailure(attempt)}\n\nThe last code:\n\n\`\`\`${attempt.language}\n${attempt.code.trimEnd()}\n\`\`\``;
  return complete(noted(ran, `The code failed ${rounds} times`), answer, events);
}

/** The data agent's run succeeded: its chart (if planned and valid) is announced, then the summary is asked for. */
function chartThenSummarize(
  d: D,
  chart: Record<string, unknown> | null,
  attempt: CodeAttempt,
  events: EventDraft[],
): Decided {
  let charted = d;
  if (chart !== null) {
    const made = chartOf(chart, attempt.stdout);
    if ("spec" in made) {
      events.push({ type: "visualization", spec: made.spec });
      const kept = [...(d.shared_memory.data_visualizations ?? []), made.spec].slice(
        -SUPERVISOR_LIMITS.maxNoteVisualizations,
      );
      charted = { ...d, charted: true, shared_memory: { ...d.shared_memory, data_visualizations: kept } };
    } else {
      charted = noted(d, `No chart: ${made.why}`);
    }
  }
  return next({ ...charted, code: null, node: "summarize" }, events);
}

/** A tool call's outcome (or the executor task's failure, as a failed call): observed, announced, and the agent asked again. */
function onToolOutcome(d: D, outcome: ToolCallOutcome, events: EventDraft[]): Decided {
  const call = d.pending_call;
  if (call === null) return internal(d, `a ${d.node} outcome came back with no tool call pending`);
  events.push(toolResult(call.id, call.tool, outcome.ok, outcome.content, outcome.latency_ms));
  if (d.node === "execute") return onCodeRun(d, outcome, call.id, events);
  events.push(
    stage(
      d.node,
      outcome.ok ? "completed" : "failed",
      `${call.tool} ${outcome.ok ? "answered" : `failed (${outcome.error?.code ?? "error"})`}`,
    ),
  );
  const observed = observe(d, {
    tool: call.tool,
    arguments: boundedArgs(call.arguments).args,
    ok: outcome.ok,
    content: clip(outcome.content, OBSERVATION_MAX),
  });
  const counted: D = {
    ...observed,
    pending_call: null,
    tool_iterations: d.tool_iterations + 1,
    node: AFTER_TOOLS[d.node] ?? d.node,
  };
  const sourced = d.active_agent === "research" ? addSources(counted, outcome.citations, events) : counted;
  return next(sourced, events);
}

/** An agent's node answered: its output, typed by its op, moves the agent to its next node, or ends the session with its answer. */
function onResult(d: D, input: ResultInput): Decided {
  const events: EventDraft[] = [];
  const done = (line: string) => events.push(stage(d.node, "completed", line));
  if (isResultOf(input, OPS.router.route)) {
    done("The router picked an agent");
    return route(d, routingDecision({ routed: input.output }), events);
  }
  if (isResultOf(input, OPS.executor.call)) return onToolOutcome(d, input.output, events);
  if (isResultOf(input, OPS.chat.respond)) {
    const action = input.output;
    if (action.action === "tool") return onTool(d, action.tool, action.arguments, events);
    done("The chat agent answered");
    return complete(d, action.text, events);
  }
  if (isResultOf(input, OPS.researcher.search)) {
    const action = input.output;
    if (action.action === "tool") return onTool(d, action.tool, action.arguments, events);
    done(`The search ended with ${d.sources.length} source(s)`);
    return next({ ...d, search_summary: clip(action.text, LIMITS.maxTextChars), node: "analyze" }, events);
  }
  if (isResultOf(input, OPS.researcher.analyze)) {
    done("Analyzed the findings");
    return next({ ...d, analysis: input.output.analysis, node: "synthesize" }, events);
  }
  if (isResultOf(input, OPS.researcher.synthesize)) {
    done("Synthesized the findings");
    return next({ ...d, synthesis: input.output.synthesis, node: "finalize" }, events);
  }
  if (isResultOf(input, OPS.researcher.finalize)) {
    done("The research agent's final text");
    return complete(d, input.output.response, events);
  }
  return onWritingOrDataResult(d, input, done, events);
}

/** The writing and data agents' nodes, and the code a coder or an analyst generated. */
function onWritingOrDataResult(d: D, input: ResultInput, done: (line: string) => void, events: EventDraft[]): Decided {
  if (isResultOf(input, OPS.writer.analyze)) {
    const analysis = input.output;
    if (analysis.action === "tool") return onTool(d, analysis.tool, analysis.arguments, events);
    const { action: _brief, ...writing } = analysis;
    done(`A ${writing.writing_type} in a ${writing.tone} tone`);
    return next({ ...d, writing, node: "outline" }, events);
  }
  if (isResultOf(input, OPS.writer.outline)) {
    done("Outlined");
    return next({ ...d, outline: input.output.outline, node: "write" }, events);
  }
  if (isResultOf(input, OPS.writer.write)) {
    done("Drafted");
    return next({ ...d, draft: input.output.draft, node: "finalize" }, events);
  }
  if (isResultOf(input, OPS.writer.finalize)) {
    done("The writing agent's final text");
    return complete(d, input.output.final_content, events);
  }
  if (isResultOf(input, OPS.analyst.plan)) {
    const plan = input.output;
    if (plan.action === "tool") return onTool(d, plan.tool, plan.arguments, events);
    done(`Planned the analysis${plan.chart ? " with a chart" : ""}`);
    return next({ ...d, analysis_plan: plan.analysis_plan, chart_planned: plan.chart, node: "generate" }, events);
  }
  if (isResultOf(input, OPS.analyst.generate)) return onDataCode(d, input.output, events);
  if (isResultOf(input, OPS.coder.generate)) return onCoderAction(d, input.output, events);
  if (isResultOf(input, OPS.analyst.summarize)) {
    done("Summarized the analysis");
    return complete(d, input.output.summary, events);
  }
  return internal(d, `no handler for a ${input.role}.${input.op} result at the ${d.node} node`);
}

/** The analyst's code: it runs in the sandbox as an executor.call. */
function onDataCode(d: D, made: DataCode, events: EventDraft[]): Decided {
  const round = d.code_attempts.length + 1;
  const code = {
    language: "python" as const,
    code: made.code,
    explanation: "",
    chart: d.chart_planned ? made.chart : null,
  };
  events.push(stage("generate", "completed", `Generated the analysis code (round ${round})`));
  return runCode({ ...d, code }, events);
}

/** The coder's action: code to run in the sandbox, a tool call, or an answer without running code. */
function onCoderAction(d: D, action: CoderAction, events: EventDraft[]): Decided {
  const round = d.code_attempts.length + 1;
  if (action.action === "tool") return onTool(d, action.tool, action.arguments, events);
  if (action.action === "answer") {
    events.push(stage("generate", "completed", "The code agent answered without running code"));
    return complete(d, action.text, events);
  }
  events.push(stage("generate", "completed", `Generated ${action.language} code (round ${round})`));
  return runCode(
    { ...d, code: { language: action.language, code: action.code, explanation: action.explanation, chart: null } },
    events,
  );
}

/** Dispatches the pending code to its sandbox tool under a new call id. */
function runCode(d: D, events: EventDraft[]): Decided {
  if (d.code === null) return internal(d, "no code to run");
  return next(withCall(d, CODE_TOOL[d.code.language], { code: runnableCode(d, d.code.code) }, "execute"), events);
}

/** The state with a tool call pending at `node`, under the session's next call id (`call-<n>`). */
function withCall(d: D, tool: string, args: Record<string, unknown>, node: D["node"]): D {
  const calls = d.tool_calls + 1;
  return { ...d, tool_calls: calls, pending_call: { id: `call-${calls}`, tool, arguments: args }, node };
}

/** What a model-less deployment is told: the role's own words when they already say so (once), and how to configure a model. */
function needsModelAnswer(agent: string, node: string, message: string): string {
  const said = /needs a language model/i.test(message)
    ? message
    : `The ${agent} needs a language model for its ${node} step, and this deployment has none configured. ${message}`;
  return said.includes("AGENTMESH_LLM_BASE_URL") ? said : `${said} ${MODEL_HINT}`;
}

/** An agent's op failed for good: a model-less deployment is told how to get one; any other failure is named. */
function agentFailed(d: D, input: Extract<TaskInput, { kind: "failure" }>, events: EventDraft[]): Decided {
  const { error } = input;
  const agent = d.node === "router" ? "router" : `${agentOf(d)} agent`;
  const answer =
    error.code === "needs_model"
      ? needsModelAnswer(agent, d.node, error.message)
      : `${COULD_NOT_ANSWER} The ${agent}'s ${d.node} step failed (${error.code}): ${error.message}`;
  const wire: WireError = { ...error, component: error.component ?? input.role };
  const ended = endedOnError(
    { ...d, shared_memory: withArtifacts(d) },
    clip(answer, RESPONSE_MAX),
    error.message,
    d.node,
  );
  return {
    data: ended,
    control: {
      kind: "fail",
      error: wire,
      final_answer: ended.response ?? answer,
      final_reasoning_trace: reasoningTrace(ended),
    },
    events,
  };
}

/** A task failed (after the agent's own retries): the router falls back to chat; a tool call fails as a call; an agent node runs once more if the failure may pass, else the session ends. */
function onFailure(d: D, input: Extract<TaskInput, { kind: "failure" }>): Decided {
  const { error } = input;
  const events: EventDraft[] = [stage(d.node, "failed", `${error.code}: ${error.message}`)];
  if (d.node === "router") {
    const reason = clip(
      `the router failed (${error.code}): ${error.message}; the chat agent answers`,
      SUPERVISOR_LIMITS.maxRoutingReasonChars,
    );
    return route(d, { agent: "chat", confidence: 0, reason, is_low_confidence: true }, events);
  }
  if (isToolNode(d.node)) {
    const content = `${error.code}: ${error.message}`;
    const failed: ToolCallOutcome = {
      tool: d.pending_call?.tool ?? "unknown",
      ok: false,
      content: clip(content, OBSERVATION_MAX),
      error: { code: error.code, message: clip(error.message, 500), retryable: error.retryable },
      latency_ms: input.elapsed_ms ?? 0,
      attempts: 0,
      citations: [],
      code: null,
    };
    return onToolOutcome(d, failed, []);
  }
  if (error.retryable && input.attempt < AGENT_RETRIES) return next(d, events, input.attempt + 1);
  return agentFailed(d, input, events);
}

/** The trace of a supervisor session: the routing, the handoffs, the notes, the tool calls made. */
function reasoningTrace(d: D): string {
  const routed =
    d.selected_agent === null
      ? "Not routed."
      : `Routed to ${d.selected_agent} (confidence ${d.routing_confidence ?? 0}${d.is_low_confidence ? ", low" : ""}): ${d.routing_reason ?? ""}`;
  const lines = [
    routed,
    ...d.notes,
    `Tool calls: ${d.tool_calls}. Handoffs: ${d.handoff_count}. Final agent: ${d.active_agent ?? "none"}.`,
  ];
  return clip(lines.join("\n"), TRACE_MAX);
}

function decide(data: D, input: WorkflowInput): Decided {
  switch (input.kind) {
    case "start":
      if (data.node !== "router" || data.selected_agent !== null)
        return internal(data, "start after the session began");
      // An explicit mode bypasses the router (its model is not asked).
      if (data.mode !== null) return route(data, routingDecision({ mode: data.mode }), []);
      return next(data, []);
    case "result":
    case "failure": {
      const op = nodeOp(data);
      if (op === null || op.role !== input.role || op.op !== input.op || input.tag !== data.node) {
        return internal(
          data,
          `the ${data.node} node awaits ${op ? `${op.role}.${op.op}` : "nothing"}, got ${input.role}.${input.op}`,
        );
      }
      return input.kind === "result" ? onResult(data, input) : onFailure(data, input);
    }
    case "user_reply":
      return internal(data, "the supervisor never asks the user");
  }
}

/** A router picks one of five agents, each a graph of nodes (one task each) that may hand the task on, at most three times. */
export const supervisor: WorkflowDefinition<SupervisorData> = {
  name: "supervisor",
  version: 1,
  init: (query, options, messages, defaults, _carry, owner) => ({
    workflow: "supervisor",
    query,
    mode: options.mode ?? null,
    depth: options.depth ?? "standard",
    scenario: options.scenario ?? "academic",
    messages: boundConversation(messages ?? []),
    tools_available: [...(defaults?.supervisor ?? MINIMAL_SUPERVISOR_SETTINGS).tools],
    node: "router",
    selected_agent: null,
    routing_reason: null,
    routing_confidence: null,
    is_low_confidence: false,
    active_agent: null,
    delegated_task: null,
    handoff_context: null,
    handoff_count: 0,
    handoff_history: [],
    pending_handoff: null,
    visited_agents: [],
    handoff_summary: handoffSummary([]),
    user_id: owner ?? null,
    provider: options.provider ?? null,
    model: options.model ?? null,
    tier: options.tier ?? null,
    image_attachments: options.image_attachments ?? [],
    shared_memory: {},
    ...FRESH_SCRATCH,
    // Only the attachments' data is kept (not the files), so the stored state stays small.
    data_input: attachmentData(options.attachments ?? []),
    observations: [],
    sources: [],
    code_attempts: [],
    notes: [],
    tool_calls: 0,
    response: null,
    error: null,
    error_component: null,
  }),
  decide,
  abort: (data: D, error: WireError) => {
    const answer = clip(`${COULD_NOT_ANSWER} The session ended early (${error.code}): ${error.message}`, 20_000);
    const ended = endedOnError(data, answer, error.message, error.component ?? data.node);
    return { data: ended, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) };
  },
};
