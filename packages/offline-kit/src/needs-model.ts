import { AgentmeshError } from "@agentmesh/contracts";

/**
 * The offline behaviour of an op that only a language model can do (the supervisor's research
 * and writing agents): it answers `needs_model`, saying which agent needs one and how to
 * configure it, rather than a made-up report or text.
 */
export function needsModel(
  agent: string,
  cannot: string,
): (input: unknown, ctx: { readonly configHint: string }) => never {
  return (_input, ctx) => {
    throw new AgentmeshError(
      "needs_model",
      `The ${agent} needs a language model: without one it cannot ${cannot}. ${ctx.configHint}`,
    );
  };
}
