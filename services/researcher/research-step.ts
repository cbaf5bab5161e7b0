import type { OfflineContext } from "@agentmesh/agent-kit";
import { LIMITS, type OpRequest, type OpResponse } from "@agentmesh/contracts";
import { clip, quote, renderObservations, renderTools } from "@agentmesh/offline-kit";

/**
 * critic-chain's researcher (one research step, a subgraph with tools): what its model is
 * told each turn, and what it does offline (it searches the local corpus and quotes what it found).
 */

type Request = OpRequest<"researcher", "research">;
type Turn = OpResponse<"researcher", "research">;

/** The most characters of a rejected result shown back to the model. */
const REJECTED_SHOWN = 6000;
/** The corpus query the offline researcher sends: the research step, cut to the tool's bound. */
const QUERY_MAX = 400;

/** What the turn may do next: call one of its tools while rounds are left, else answer now. */
function nextMove(input: Request): string {
  if (input.tools.length === 0) return "No tools are available to you: answer with action answer.";
  if (input.tool_rounds_left === 0)
    return "No tool rounds are left in this turn: answer now with action answer, from what you have.";
  return `Tool rounds left in this turn: ${input.tool_rounds_left}. To call a tool, answer with action tool, its name in tool and its arguments as a JSON object in arguments_json; to finish, action answer with the result.\n\nTools you may call:\n${renderTools(input.tools)}`;
}

/** The researcher's user prompt: the question, the step, the instruction, what the critic rejected and why, its tools and what they returned. */
export function renderResearch(input: Request): string {
  return [
    `Question: ${input.question}`,
    `Research step: ${input.research_step}`,
    `Instruction: ${input.message.content}`,
    input.rejected_result !== null
      ? `Your earlier result for this step, which the critic rejected:\n${clip(input.rejected_result, REJECTED_SHOWN)}`
      : "",
    input.feedback ? `Critic feedback: ${input.feedback}` : "",
    renderObservations(input.observations),
    nextMove(input),
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** One line for the log. */
export const summarizeResearch = (o: Turn): string =>
  o.action === "tool" ? `calls ${o.tool}` : o.result.slice(0, 120);

const answer = (result: string): Turn => ({
  action: "answer",
  result: clip(result, LIMITS.maxTextChars),
  tool: "",
  arguments_json: "",
});

/**
 * Offline: search the corpus for the step (one round), then report the passages it returned,
 * quoted and not interpreted; without the corpus, or when it found nothing, say so. Nothing is
 * made up.
 */
export function researchOffline(input: Request, ctx: Pick<OfflineContext, "configHint">): Turn {
  const step = quote(input.research_step);
  const searched = input.observations.filter((o) => o.tool === "corpus_search").at(-1);
  const canSearch = input.tools.some((t) => t.name === "corpus_search") && input.tool_rounds_left > 0;
  if (!searched && canSearch && input.research_step.trim() !== "") {
    return {
      action: "tool",
      tool: "corpus_search",
      arguments_json: JSON.stringify({ query: clip(input.research_step.trim(), QUERY_MAX) }),
      result: "",
    };
  }
  if (searched?.ok && searched.content.trim() !== "") {
    return answer(
      `The local document corpus returned these passages for the step ${step}. They are quoted as found; combining them into a finding needs a language model (${ctx.configHint})\n\n${searched.content}`,
    );
  }
  const why = searched
    ? searched.ok
      ? "the local document corpus has no passage on it"
      : `the corpus search failed (${clip(searched.content, 300)})`
    : "no research source is available offline";
  return answer(`The step ${step} was not researched: ${why}, so nothing is reported as found. ${ctx.configHint}`);
}
