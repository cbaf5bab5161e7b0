import {
  DATA_VARIABLE,
  LIMITS,
  OPS,
  RESEARCH_DEPTHS,
  SUPERVISOR_LIMITS,
  type AgentBrief,
  type SharedAgentMemory,
  type SupervisorAgent,
  type SupervisorData,
  type SupervisorNode,
} from "@agentmesh/contracts";
import { clip } from "./critic-chain-messages.js";
import { runText } from "./supervisor-code.js";
import { renderSharedNotes } from "./supervisor-notes.js";
import { NODE_OPS, offeredTools, ownTools, type NodeOp } from "./supervisor-tools.js";
import { task } from "./ops.js";
import type { TaskFields, TaskSpec } from "./types.js";

/** The supervisor's nodes as tasks (each built from the state alone) and the state a new agent starts from. */

type D = SupervisorData;

/** One attempt of a search or image tool call, and of a sandboxed code run (ms); each call gets two attempts. */
const TOOL_TIMEOUT_MS = 30_000;
const CODE_TIMEOUT_MS = 60_000;
const TOOL_MAX_ATTEMPTS = 2;
/** A shared notes text field's bound (the contract's). */
const NOTE_TEXT_MAX = LIMITS.maxTextChars;

/** Each agent's first node. */
export const FIRST_NODE: Readonly<Record<SupervisorAgent, SupervisorNode>> = {
  chat: "agent",
  research: "search_agent",
  code: "generate",
  writing: "analyze",
  data: "plan",
};
/** The tool node an agent node's tool calls run in. */
export const TOOL_NODE: Partial<Record<SupervisorNode, SupervisorNode>> = {
  agent: "tools",
  search_agent: "search_tools",
};
/** The node a tool node returns to. */
export const AFTER_TOOLS: Partial<Record<SupervisorNode, SupervisorNode>> = {
  tools: "agent",
  search_tools: "search_agent",
};
/** The nodes that are executor.call tasks (a tool call or a code run). */
export const isToolNode = (n: SupervisorNode) => n === "tools" || n === "search_tools" || n === "execute";

/** The role and op of the session's current node; null for `done` or a node the active agent has not. */
export function nodeOp(d: D): NodeOp | null {
  if (d.node === "router") return NODE_OPS.router.router ?? null;
  if (d.active_agent === null || d.node === "done") return null;
  const table: Readonly<Partial<Record<string, NodeOp>>> = NODE_OPS[d.active_agent];
  return table[d.node] ?? null;
}

/** What every agent op gets: the query, its task, the handoff's context and the shared notes rendered within their budget. */
export const brief = (d: D): AgentBrief => ({
  query: d.query,
  task: d.delegated_task ?? d.query,
  handoff_context: d.handoff_context,
  memory: renderSharedNotes(d.shared_memory),
});

/** The agent holding the task (chat before routing, which never asks an agent op). */
export const agentOf = (d: D): SupervisorAgent => d.active_agent ?? "chat";
/** The tools offered to the active agent this turn. */
export const tools = (d: D) => offeredTools(agentOf(d), d.tools_available, d.handoff_count);
export const chatRoundsLeft = (d: D) => Math.max(0, SUPERVISOR_LIMITS.chatMaxToolIterations - d.tool_iterations);
export const searchRoundsLeft = (d: D) => Math.max(0, RESEARCH_DEPTHS[d.depth].searchIterations - d.tool_iterations);
export const codeRoundsLeft = (d: D) => SUPERVISOR_LIMITS.codeMaxIterations - d.code_attempts.length;
/** The research notes: what its successful tool calls returned (refusals and failures are for the agent, not the report). */
export const notes = (d: D) => d.observations.filter((o) => o.ok).map((o) => o.content);
const research = (d: D) => ({ brief: brief(d), scenario: d.scenario, sources: d.sources, notes: notes(d) });

/**
 * The current agent node's task, of its op, built from the state alone (so a retry sends the same
 * request); null when the state lacks what the node's request needs (a writing node before the
 * analysis, a summary before any run).
 */
function agentNodeTask(d: D, f: TaskFields): TaskSpec | null {
  const writing = d.active_agent === "writing";
  switch (d.node) {
    case "router":
      return task(OPS.router.route, { query: d.query, messages: d.messages }, f);
    case "agent":
      return task(
        OPS.chat.respond,
        {
          brief: brief(d),
          messages: d.messages,
          tools: tools(d),
          observations: d.observations,
          tool_rounds_left: chatRoundsLeft(d),
        },
        f,
      );
    case "search_agent":
      return task(
        OPS.researcher.search,
        {
          brief: brief(d),
          scenario: d.scenario,
          depth: d.depth,
          tools: tools(d),
          observations: d.observations,
          search_rounds_left: searchRoundsLeft(d),
          sources: d.sources,
        },
        f,
      );
    case "analyze":
      return writing
        ? task(OPS.writer.analyze, { brief: brief(d), tools: tools(d), observations: d.observations }, f)
        : task(OPS.researcher.analyze, research(d), f);
    case "synthesize":
      return task(OPS.researcher.synthesize, { ...research(d), analysis: d.analysis ?? "" }, f);
    case "finalize":
      return writing
        ? d.writing && task(OPS.writer.finalize, { brief: brief(d), writing: d.writing, draft: d.draft ?? "" }, f)
        : task(OPS.researcher.finalize, { ...research(d), synthesis: d.synthesis ?? "" }, f);
    case "generate":
      return generateTask(d, f);
    case "outline":
      return d.writing && task(OPS.writer.outline, { brief: brief(d), writing: d.writing }, f);
    case "write":
      return d.writing && task(OPS.writer.write, { brief: brief(d), writing: d.writing, outline: d.outline ?? "" }, f);
    case "plan":
      return task(
        OPS.analyst.plan,
        { brief: brief(d), data: d.data_input, tools: tools(d), observations: d.observations },
        f,
      );
    case "summarize": {
      const execution = d.code_attempts.at(-1);
      return execution
        ? task(
            OPS.analyst.summarize,
            { brief: brief(d), analysis_plan: d.analysis_plan ?? "", execution, charted: d.charted },
            f,
          )
        : null;
    }
    case "tools":
    case "search_tools":
    case "execute":
    case "done":
      return null;
  }
}

/** The generate node: the data agent's analyst writes Python over its data, the code agent's coder writes code or answers. */
function generateTask(d: D, f: TaskFields): TaskSpec {
  const common = { brief: brief(d), attempts: d.code_attempts, rounds_left: codeRoundsLeft(d) };
  return d.active_agent === "data"
    ? task(
        OPS.analyst.generate,
        { ...common, data: d.data_input, analysis_plan: d.analysis_plan ?? "", chart: d.chart_planned },
        f,
      )
    : task(OPS.coder.generate, { ...common, tools: tools(d), observations: d.observations }, f);
}

/** The code the sandbox runs: the data agent's code gets the data's text as `DATA_TEXT` first (JSON string syntax is a valid Python string literal). */
export const runnableCode = (d: D, code: string): string =>
  d.active_agent === "data" ? `${DATA_VARIABLE} = ${JSON.stringify(d.data_input?.text ?? "")}\n${code}` : code;

/** The executor.call task of the tool call in flight. */
function toolTask(d: D, attempt: number): TaskSpec | null {
  const call = d.pending_call;
  if (call === null) return null;
  const code = d.node === "execute";
  const allowed = code ? [call.tool] : ownTools(agentOf(d), d.tools_available);
  const input = {
    tool: call.tool,
    arguments: call.arguments,
    allowed,
    limits: { max_attempts: TOOL_MAX_ATTEMPTS, timeout_ms: code ? CODE_TIMEOUT_MS : TOOL_TIMEOUT_MS },
  };
  return task(OPS.executor.call, input, {
    attempt,
    stage: d.node,
    tag: d.node,
    description: code
      ? `The ${agentOf(d)} agent's code runs in the sandbox (${call.tool})`
      : `The ${agentOf(d)} agent calls ${call.tool}`,
    toolCall: { id: call.id, tool: call.tool, args: call.arguments },
  });
}

/** The current node's task; null when the session is done or its node has no op. */
export function nodeTask(d: D, attempt: number): TaskSpec | null {
  const op = nodeOp(d);
  if (op === null) return null;
  const made = isToolNode(d.node)
    ? toolTask(d, attempt)
    : agentNodeTask(d, {
        attempt,
        stage: d.node,
        tag: d.node,
        description: d.node === "router" ? "The router picks an agent" : `The ${agentOf(d)} agent's ${d.node} node`,
      });
  // The node's op per NODE_OPS is the one the session awaits; a task of another op would never be matched.
  return made && made.role === op.role && made.op === op.op ? made : null;
}

const noteText = (s: string) => clip(s, NOTE_TEXT_MAX);

/** The shared notes with the active agent's work added (what the next specialist needs). */
export function withArtifacts(d: D): SharedAgentMemory {
  const m: SharedAgentMemory = { ...d.shared_memory };
  const last = d.code_attempts.at(-1);
  switch (d.active_agent) {
    case "chat": {
      const found = notes(d);
      if (found.length > 0) m.additional_context = noteText(found.join("\n\n"));
      break;
    }
    case "research": {
      const findings = d.synthesis ?? d.analysis ?? d.search_summary ?? (notes(d).join("\n\n") || null);
      if (findings) m.research_findings = noteText(findings);
      if (d.sources.length > 0) m.research_sources = [...d.sources];
      break;
    }
    case "code":
      if (last)
        Object.assign(m, {
          generated_code: noteText(last.code),
          code_language: last.language,
          execution_results: noteText(runText(last)),
        });
      break;
    case "writing":
      if (d.outline) m.writing_outline = noteText(d.outline);
      if (d.draft) m.writing_draft = noteText(d.draft);
      break;
    case "data":
      if (d.analysis_plan) m.data_analysis_plan = noteText(d.analysis_plan);
      if (last) m.execution_results = noteText(runText(last));
      break;
    case null:
      break;
  }
  return m;
}

/** The active agent's scratch, empty (a new agent starts with nothing of the last one's but the shared notes). */
export const FRESH_SCRATCH = {
  tool_iterations: 0,
  refusals: 0,
  observations: [],
  pending_call: null,
  sources: [],
  search_summary: null,
  analysis: null,
  synthesis: null,
  code: null,
  code_attempts: [],
  writing: null,
  outline: null,
  draft: null,
  data_input: null,
  analysis_plan: null,
  chart_planned: false,
  charted: false,
} as const satisfies Partial<D>;

/** How an agent announces it runs (the `config` event's settings). */
export function agentSettings(d: D, agent: SupervisorAgent): Record<string, string | number | boolean | null> {
  const names = (list: readonly { name: string }[]) => clip(list.map((t) => t.name).join(", "), 200);
  switch (agent) {
    case "chat":
      return { max_tool_iterations: SUPERVISOR_LIMITS.chatMaxToolIterations, tools: names(tools(d)) };
    case "research":
      return {
        depth: d.depth,
        scenario: d.scenario,
        search_iterations: RESEARCH_DEPTHS[d.depth].searchIterations,
        sources_kept: RESEARCH_DEPTHS[d.depth].sourcesKept,
        tools: names(tools(d)),
      };
    case "code":
      return { max_iterations: SUPERVISOR_LIMITS.codeMaxIterations, languages: "python, javascript" };
    case "writing":
      return { nodes: "analyze, outline, write, finalize" };
    case "data":
      return {
        max_iterations: SUPERVISOR_LIMITS.codeMaxIterations,
        data: d.data_input
          ? clip(
              `${d.data_input.format}, ${d.data_input.rows} row(s), from the ${d.data_input.origin}${d.data_input.name ? ` ${d.data_input.name}` : ""}`,
              200,
            )
          : null,
      };
  }
}
