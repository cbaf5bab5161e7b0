import { describe, expect, it } from "vitest";
import { ROLES, type OpRequest } from "@agentmesh/contracts";
import { renderResearch, researchOffline } from "./research-step.js";

const base: OpRequest<"researcher", "research"> = {
  message: {
    sender: "orchestrator",
    receiver: "researcher",
    type: "instruction",
    content: "Research: Find who invented CRISPR",
    step_id: 0,
  },
  question: "What is CRISPR and who invented it?",
  research_step: "Find who invented CRISPR",
  feedback: null,
  rejected_result: null,
  tools: [{ name: "corpus_search", description: "Search the local document corpus." }],
  observations: [],
  tool_rounds_left: 5,
};
const ctx = { configHint: "Set AGENTMESH_LLM_BASE_URL." };

describe("researcher.research (critic-chain): its prompt", () => {
  it("shows the tools and the rounds left, and at zero rounds tells the model to answer", () => {
    const prompt = renderResearch(base);
    expect(prompt).toContain("Tool rounds left in this turn: 5");
    expect(prompt).toContain("- corpus_search: Search the local document corpus.");
    const last = renderResearch({ ...base, tool_rounds_left: 0 });
    expect(last).toContain("No tool rounds are left in this turn: answer now");
    expect(last).not.toContain("- corpus_search");
  });

  it("on a retry shows the rejected result beside the critic's feedback, and the earlier tool results", () => {
    const prompt = renderResearch({
      ...base,
      feedback: "Name both inventors.",
      rejected_result: "It was invented in a lab.",
      observations: [
        {
          tool: "corpus_search",
          arguments: { query: "CRISPR inventors" },
          ok: true,
          content: "[1] crispr.md: Doudna and Charpentier",
        },
      ],
    });
    expect(prompt).toContain(
      "Your earlier result for this step, which the critic rejected:\nIt was invented in a lab.",
    );
    expect(prompt).toContain("Critic feedback: Name both inventors.");
    expect(prompt).toContain(
      'corpus_search {"query":"CRISPR inventors"} returned: [1] crispr.md: Doudna and Charpentier',
    );
    expect(renderResearch(base)).not.toContain("rejected");
  });
});

describe("researcher.research offline: the corpus, quoted, never invented", () => {
  const reply = ROLES.researcher.research.response;

  it("searches the corpus for the step first", () => {
    const turn = reply.parse(researchOffline(base, ctx));
    expect(turn).toMatchObject({ action: "tool", tool: "corpus_search" });
    expect(JSON.parse(turn.arguments_json)).toEqual({ query: "Find who invented CRISPR" });
  });

  it("then reports the passages it found as quoted", () => {
    const found = {
      ...base,
      observations: [
        { tool: "corpus_search", arguments: { query: "x" }, ok: true, content: "[1] crispr.md: passage about CRISPR" },
      ],
    };
    const turn = reply.parse(researchOffline(found, ctx));
    expect(turn.action).toBe("answer");
    expect(turn.result).toContain("[1] crispr.md: passage about CRISPR");
    expect(turn.result).toMatch(/quoted as found/);
  });

  it("says plainly when the corpus had nothing, failed, or was not offered", () => {
    const none = researchOffline(
      { ...base, observations: [{ tool: "corpus_search", arguments: {}, ok: true, content: "" }] },
      ctx,
    );
    expect(none.result).toMatch(/has no passage on it/);
    const failed = researchOffline(
      { ...base, observations: [{ tool: "corpus_search", arguments: {}, ok: false, content: "timeout: slow" }] },
      ctx,
    );
    expect(failed.result).toMatch(/corpus search failed \(timeout: slow\)/);
    const without = researchOffline({ ...base, tools: [] }, ctx);
    expect(without).toMatchObject({ action: "answer", result: expect.stringContaining("was not researched") });
  });
});
