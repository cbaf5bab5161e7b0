import { describe, expect, it } from "vitest";
import { Capability, DomainHints, type HaloCitation } from "@agentmesh/contracts";
import { DEFAULT_DOMAIN_HINTS } from "./halo-domain-hints.js";
import { domainBonus, judge, scoreOutput } from "./halo-judge.js";
import { answeredOutput, availabilityMessage, stripAgentTags, unavailableOutput } from "./halo-outputs.js";

const web = (n: number): HaloCitation => ({
  title: `Page ${n}`,
  url: `https://example.com/${n}`,
  path: null,
  snippet: "",
});
const cites = (n: number) => Array.from({ length: n }, (_, i) => web(i + 1));
const answer = (c: Capability, text: string, citations: HaloCitation[] = []) =>
  answeredOutput(c, { response_str: text, citations }, 100);
const LONG = "x".repeat(121);
const NEUTRAL = "What should I know about this?";

describe("halo judge scores", () => {
  it("scores min(3, citations) + 1 for an answer over 120 characters", () => {
    expect(scoreOutput(answer("rag", "short", cites(2)), NEUTRAL)).toBe(2);
    expect(scoreOutput(answer("rag", "short", cites(5)), NEUTRAL)).toBe(3);
    expect(scoreOutput(answer("rag", LONG, cites(5)), NEUTRAL)).toBe(4);
    expect(scoreOutput(answer("rag", "x".repeat(120)), NEUTRAL)).toBe(0);
    expect(scoreOutput(answer("rag", LONG), NEUTRAL)).toBe(1);
  });

  it("counts a source cited twice once", () => {
    expect(scoreOutput(answer("rag", "short", [web(1), web(1), web(2)]), NEUTRAL)).toBe(2);
    expect(judge([answer("rag", "short", [web(1), web(1)])], ["rag"], NEUTRAL).judge_response).toBe(
      "rag: score 1, citations 1, length 5 (primary)",
    );
  });

  it("adds the domain bonus when the question has one of the capability's keywords, as a whole word", () => {
    expect(domainBonus("Which drugs target HER2?", "biomcp", DEFAULT_DOMAIN_HINTS)).toBe(1);
    expect(domainBonus("Any clinical trials for HER2?", "biomcp", DEFAULT_DOMAIN_HINTS)).toBe(1);
    expect(domainBonus("Which drugs target HER2?", "graph", DEFAULT_DOMAIN_HINTS)).toBe(0);
    expect(domainBonus("a genetic question", "biomcp", DEFAULT_DOMAIN_HINTS)).toBe(0);
    expect(scoreOutput(answer("biomcp", "short", cites(1)), "Which drugs target HER2?")).toBe(2);
  });

  it("ships a valid hint table of lowercase keywords for every capability", () => {
    expect(DomainHints.parse(DEFAULT_DOMAIN_HINTS)).toEqual(DEFAULT_DOMAIN_HINTS);
    expect(Object.keys(DEFAULT_DOMAIN_HINTS).sort()).toEqual([...Capability.options].sort());
    for (const row of Object.values(DEFAULT_DOMAIN_HINTS))
      for (const k of row.keywords) expect(k).toBe(k.toLowerCase());
  });

  it("takes a deployment's own hint table instead of the workflow's", () => {
    const hints = { graph: { bonus: 3, keywords: ["her2"] } };
    expect(scoreOutput(answer("graph", "short"), "What binds HER2?", hints)).toBe(3);
    expect(scoreOutput(answer("biomcp", "short"), "Which drugs target HER2?", hints)).toBe(0);
  });

  it("scores an unavailable specialist 0, whatever the question", () => {
    const down = unavailableOutput("biomcp", "deadline_exceeded", 30_000);
    expect(down.response_str).toBe("The biomcp specialist is unavailable right now.");
    expect(scoreOutput(down, "Which drugs target HER2?")).toBe(0);
  });
});

describe("halo judge ranking", () => {
  it("ranks by score and gives ties to the capability earlier in the plan", () => {
    const outputs = [answer("rag", "a", cites(1)), answer("graph", "b", cites(1)), answer("web", "c", cites(3))];
    const ranked = (plan: Capability[]) => judge(outputs, plan, NEUTRAL).ranked.map((j) => j.output.capability);
    expect(ranked(["graph", "rag", "web"])).toEqual(["web", "graph", "rag"]);
    expect(ranked(["rag", "graph", "web"])).toEqual(["web", "rag", "graph"]);
  });

  it("never makes an unavailable specialist primary and puts it last, even below a zero-score answer", () => {
    const outputs = [unavailableOutput("graph", "tool_error", 5), answer("chitchat", "hi")];
    const verdict = judge(outputs, ["graph", "chitchat"], NEUTRAL);
    expect(verdict.primary?.capability).toBe("chitchat");
    expect(verdict.ranked.map((j) => [j.output.capability, j.score])).toEqual([
      ["chitchat", 0],
      ["graph", 0],
    ]);
  });

  it("has no primary when every specialist is unavailable", () => {
    const verdict = judge(
      [unavailableOutput("rag", "deadline_exceeded", 1), unavailableOutput("web", "tool_unavailable", 1)],
      ["rag", "web"],
      NEUTRAL,
    );
    expect(verdict.primary).toBeNull();
    expect(verdict.ranked.map((j) => j.output.capability)).toEqual(["rag", "web"]);
  });

  it("does not depend on the order the outputs arrived in", () => {
    const outputs = [
      answer("rag", "a", cites(2)),
      unavailableOutput("web", "deadline_exceeded", 9),
      answer("graph", LONG, cites(1)),
      answer("biomcp", "b", cites(2)),
    ];
    const plan: Capability[] = ["graph", "rag", "biomcp", "web"];
    const forward = judge(outputs, plan, NEUTRAL);
    expect(judge([...outputs].reverse(), plan, NEUTRAL)).toEqual(forward);
    expect(forward.ranked.map((j) => j.output.capability)).toEqual(["graph", "rag", "biomcp", "web"]);
  });

  it("writes one summary line per specialist: capability, score, citations, length", () => {
    const verdict = judge(
      [answer("rag", "short answer", cites(4)), unavailableOutput("graph", "deadline_exceeded", 30_000)],
      ["graph", "rag"],
      NEUTRAL,
    );
    expect(verdict.judge_response).toBe(
      [
        "rag: score 3, citations 4, length 12 (primary)",
        `graph: score 0, citations 0, length ${availabilityMessage("graph").length} (unavailable: deadline_exceeded)`,
      ].join("\n"),
    );
  });
});

describe("halo specialist outputs", () => {
  it("strips agent tags and the specialist's own citation numbers", () => {
    expect(stripAgentTags("[Graph] HER2 interacts with EGFR [1].")).toBe("HER2 interacts with EGFR.");
    expect(stripAgentTags("[RAG]  The notes say so [2, 3] and more [BioMCP Agent].")).toBe(
      "The notes say so and more.",
    );
    expect(stripAgentTags("[llama_mcp] [Web] [ChitChat] [HALO] Hello")).toBe("Hello");
    expect(stripAgentTags("Keep [brackets] that are not tags")).toBe("Keep [brackets] that are not tags");
  });

  it("stores an answer without its tags, and one that was only tags as unavailable", () => {
    expect(answer("graph", "[Graph] Fine.").response_str).toBe("Fine.");
    const empty = answer("graph", "[Graph]", cites(2));
    expect(empty).toMatchObject({
      status: "unavailable",
      error_code: "invalid_message",
      citations: [],
      response_str: availabilityMessage("graph"),
    });
  });
});
