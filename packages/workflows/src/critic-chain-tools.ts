import {
  CRITIC_CHAIN_TOOL_ROUNDS,
  type CriticChainData,
  type CriticChainSettings,
  type ExpertState,
  type OfferedTool,
  type ResearcherState,
} from "@agentmesh/contracts";
import { TOOL_DESCRIPTIONS } from "./supervisor-tools.js";

/** The tool loops of critic-chain's researcher and expert (subgraphs with tools), as pure state changes. */

type D = CriticChainData;

/** `text` in at most `max` characters, marked when cut (critic-chain-messages' clip, which imports this module). */
const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** The steps whose agent may call tools, each call an executor.call task of its own. */
export type LoopStep = "researcher" | "expert";
export const isLoopStep = (step: string): step is LoopStep => step === "researcher" || step === "expert";

/** One agent turn's loop state (a ResearcherState or ExpertState, without the step fields). */
export type AgentLoop = ExpertState;

/** What the researcher's and the expert's tools do, as their models are told. */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  ...TOOL_DESCRIPTIONS,
  calculator:
    'Evaluate a math expression exactly (64 significant digits). Arguments: {"expression": string}. Returns the value.',
};

/**
 * The registry's grants for each role (packages/tools' DEFAULT_TOOL_ROLES: calculator,
 * corpus_search, web_search and the code runners), in the order they are offered; a test checks
 * them against the registry.
 */
export const CRITIC_CHAIN_AGENT_TOOLS: Readonly<Record<LoopStep, readonly string[]>> = {
  researcher: ["corpus_search", "web_search", "calculator", "run_python", "run_js"],
  expert: ["calculator", "run_python", "run_js", "corpus_search"],
};

/** Every tool critic-chain's agents may be offered. */
export const CRITIC_CHAIN_TOOLS: readonly string[] = [
  ...new Set([...CRITIC_CHAIN_AGENT_TOOLS.researcher, ...CRITIC_CHAIN_AGENT_TOOLS.expert]),
];

/** What every deployment serves (the calculator, the corpus and the sandbox), with the default rounds; web_search needs its key. */
export const MINIMAL_CRITIC_CHAIN_SETTINGS: CriticChainSettings = {
  tools: ["calculator", "corpus_search", "run_python", "run_js"],
  max_tool_rounds: CRITIC_CHAIN_TOOL_ROUNDS.default,
};

/** The agent's tools that this session's deployment serves, in the agent's order. */
export const agentTools = (step: LoopStep, available: readonly string[]): string[] =>
  CRITIC_CHAIN_AGENT_TOOLS[step].filter((t) => available.includes(t));

/** The agent's tools as offered to its model. */
export const offeredTools = (d: D, step: LoopStep): OfferedTool[] =>
  agentTools(step, d.tools_available).map((name) => ({ name, description: DESCRIPTIONS[name] ?? name }));

/** The loop state of the step's current turn; null before its first turn. */
export function loopOf(d: D, step: LoopStep): AgentLoop | null {
  if (step === "expert") return d.expert_state;
  const s = d.researcher_states[String(d.current_research_index)];
  if (!s) return null;
  const { step_id: _id, research_step: _step, ...loop } = s;
  return loop;
}

/** The state with the step's loop replaced (a researcher's under its step's index, with the step it researches). */
export function withLoop(d: D, step: LoopStep, loop: AgentLoop): D {
  if (step === "expert") return { ...d, expert_state: loop };
  const i = d.current_research_index;
  const state: ResearcherState = { step_id: i, research_step: cut(d.research_steps[i] ?? "", 2000), ...loop };
  return { ...d, researcher_states: { ...d.researcher_states, [String(i)]: state } };
}

/** Tool rounds the step's current turn has left (0: it must answer). */
export const roundsLeft = (d: D, step: LoopStep): number =>
  Math.max(0, d.max_tool_rounds - (loopOf(d, step)?.tool_rounds ?? 0));

/**
 * A new turn of the agent: rounds and refusals start again, its earlier observations stay (the
 * agent gets its existing loop state, so a retry sees what its tools found before).
 */
export function startTurn(d: D, step: LoopStep): D {
  const loop = loopOf(d, step);
  return withLoop(d, step, {
    turns: loop?.turns ?? 0,
    tool_rounds: 0,
    refusals: 0,
    observations: loop?.observations ?? [],
    pending_call: null,
  });
}

/** One more model turn counted (each dispatch of the agent's op). */
export function countTurn(d: D, step: LoopStep): D {
  const loop = loopOf(d, step);
  return loop ? withLoop(d, step, { ...loop, turns: loop.turns + 1 }) : d;
}

/** Observation content kept of a research step once its critic approved it (the result itself is in research_results). */
const SETTLED_CONTENT = 300;

/** The current research step's observations cut short once it is approved, so twenty steps' states stay small. */
export function settleResearch(d: D): D {
  const key = String(d.current_research_index);
  const s = d.researcher_states[key];
  if (!s) return d;
  const observations = s.observations.map((o) => ({ ...o, content: cut(o.content, SETTLED_CONTENT) }));
  return { ...d, researcher_states: { ...d.researcher_states, [key]: { ...s, observations, pending_call: null } } };
}
