import type { OpName, OpRequest, OpResponse, RoleName } from "@agentmesh/contracts";

/** How one op talks to a model: its instructions, prompt rendering and a one-line summary. */
export interface OpPrompt<Req, Res> {
  /** Bumped whenever the instructions change; recorded in every step's provenance. */
  readonly promptVersion: string;
  readonly system: string;
  render(input: Req): string;
  summarize(output: Res): string;
}

/** An agent role: the prompts of each of its ops. The schemas come from the contracts' registry. */
export interface AgentDefinition<R extends RoleName = RoleName> {
  readonly role: R;
  readonly description: string;
  readonly ops: { readonly [O in OpName<R>]: OpPrompt<OpRequest<R, O>, OpResponse<R, O>> };
}

/** Identity helper that type-checks an agent definition against the role registry. */
export function defineAgent<R extends RoleName>(def: AgentDefinition<R>): AgentDefinition<R> {
  return def;
}
