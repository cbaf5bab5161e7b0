import {
  HANDOFF_MATRIX,
  MAX_HANDOFFS,
  type OfferedTool,
  type RoleName,
  type StreamingNode,
  type SupervisorAgent,
  type SupervisorSettings,
} from "@agentmesh/contracts";
import { handoffToolName } from "./supervisor-handoff.js";

/** The tools every deployment serves (the corpus and the sandbox); web and image tools need their keys. */
export const MINIMAL_SUPERVISOR_SETTINGS: SupervisorSettings = { tools: ["corpus_search", "run_python", "run_js"] };

/** What each tool the supervisor's agents may call does, as the agent's model is told (in the order tools are offered). */
export const TOOL_DESCRIPTIONS = {
  web_search:
    'Search the web. Arguments: {"query": string}. Returns the top results with their titles, links and snippets.',
  corpus_search:
    'Search the local document corpus. Arguments: {"query": string}. Returns the best passages with their files.',
  generate_image: 'Generate an image from a description. Arguments: {"prompt": string}. Returns where the image is.',
  analyze_image: 'Describe or answer a question about an image. Arguments: {"url": string, "question": string}.',
  run_python:
    'Run Python (standard library) in a sandbox. Arguments: {"code": string}. Returns stdout, stderr and the result.',
  run_js: 'Run JavaScript in a sandbox. Arguments: {"code": string}. Returns stdout, stderr and the result.',
} as const satisfies Readonly<Record<string, string>>;

/** Every tool the supervisor's agents may be offered, in the order they are offered. */
export const SUPERVISOR_TOOLS: ReadonlyArray<keyof typeof TOOL_DESCRIPTIONS> = Object.keys(TOOL_DESCRIPTIONS).filter(
  (k): k is keyof typeof TOOL_DESCRIPTIONS => Object.hasOwn(TOOL_DESCRIPTIONS, k),
);

const handoffDescription = (target: SupervisorAgent): string =>
  `Hand the task to the ${target} agent when it is better suited. Arguments: {"task_description": string, "context"?: string}.`;

/** Each agent's own tools: chat and research search with them; code, writing and data have none (their code runs are the workflow's). */
export const AGENT_TOOLS: Readonly<Record<SupervisorAgent, readonly string[]>> = {
  chat: ["web_search", "corpus_search", "generate_image", "analyze_image"],
  research: ["web_search", "corpus_search", "generate_image", "analyze_image"],
  code: [],
  writing: [],
  data: [],
};

/** An agent's own tools that this deployment serves, in the agent's order. */
export const ownTools = (agent: SupervisorAgent, available: readonly string[]): string[] =>
  AGENT_TOOLS[agent].filter((t) => available.includes(t));

/** The tools offered to `agent` this turn: its own served tools, then its handoff tools while fewer than MAX_HANDOFFS were made. */
export function offeredTools(
  agent: SupervisorAgent,
  available: readonly string[],
  handoffCount: number,
): OfferedTool[] {
  const described: Readonly<Record<string, string>> = TOOL_DESCRIPTIONS;
  const own = ownTools(agent, available).map((name) => ({ name, description: described[name] ?? name }));
  const handoffs =
    handoffCount < MAX_HANDOFFS
      ? HANDOFF_MATRIX[agent].map((target) => ({
          name: handoffToolName(target),
          description: handoffDescription(target),
        }))
      : [];
  return [...own, ...handoffs];
}

/** The role and op that run one of the nodes. */
export interface NodeOp {
  readonly role: RoleName;
  readonly op: string;
}

/**
 * Which role and op serve each graph node, per agent (the node names are STREAMING_CONFIG's, so
 * each op's `stream` setting can be checked against it). Tool nodes are the executor's.
 */
export const NODE_OPS: Readonly<
  Record<SupervisorAgent | "router", Partial<Record<StreamingNode | "execute" | "plan", NodeOp>>>
> = {
  router: { router: { role: "router", op: "route" } },
  chat: { agent: { role: "chat", op: "respond" }, tools: { role: "executor", op: "call" } },
  research: {
    search_agent: { role: "researcher", op: "search" },
    search_tools: { role: "executor", op: "call" },
    analyze: { role: "researcher", op: "analyze" },
    synthesize: { role: "researcher", op: "synthesize" },
    finalize: { role: "researcher", op: "finalize" },
  },
  code: { generate: { role: "coder", op: "generate" }, execute: { role: "executor", op: "call" } },
  writing: {
    analyze: { role: "writer", op: "analyze" },
    outline: { role: "writer", op: "outline" },
    write: { role: "writer", op: "write" },
    finalize: { role: "writer", op: "finalize" },
  },
  data: {
    plan: { role: "analyst", op: "plan" },
    generate: { role: "analyst", op: "generate" },
    execute: { role: "executor", op: "call" },
    summarize: { role: "analyst", op: "summarize" },
  },
};
