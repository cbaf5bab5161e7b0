/**
 * critic-chain offers its researcher and expert exactly the registry's grants for their roles
 * (packages/tools' DEFAULT_TOOL_ROLES) among the tools critic-chain gives them, and a deployment's
 * minimal settings name only tools every executor serves.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_TOOL_ROLES, type BuiltinToolName } from "@agentmesh/tools";
import { CRITIC_CHAIN_AGENT_TOOLS, MINIMAL_CRITIC_CHAIN_SETTINGS } from "@agentmesh/workflows";

/** The tools the brief names for critic-chain's agents: the calculator, the corpus, the web and the code runners. */
const CANDIDATES: readonly BuiltinToolName[] = ["calculator", "corpus_search", "web_search", "run_python", "run_js"];

describe("critic-chain's agent tools follow the tool registry's grants", () => {
  it.each(["researcher", "expert"] as const)("%s is offered exactly its granted tools among the candidates", (role) => {
    const granted = CANDIDATES.filter((t) => DEFAULT_TOOL_ROLES[t].includes(role));
    expect([...CRITIC_CHAIN_AGENT_TOOLS[role]].sort()).toEqual([...granted].sort());
  });

  it("the minimal settings are tools an executor always has (web_search needs its key)", () => {
    expect([...MINIMAL_CRITIC_CHAIN_SETTINGS.tools].sort()).toEqual([
      "calculator",
      "corpus_search",
      "run_js",
      "run_python",
    ]);
    expect(MINIMAL_CRITIC_CHAIN_SETTINGS.max_tool_rounds).toBe(5);
  });
});
