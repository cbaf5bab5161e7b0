import { describe, expect, it } from "vitest";
import { DEFAULT_STRATEGY_PROFILE, type EffectiveLimits, type StrategyProfile } from "@agentmesh/contracts";
import {
  COMPONENT_CEILINGS,
  MODE_STRATEGIES,
  STRATEGY_PROFILES,
  effectiveLimits,
  retrievalSources,
} from "./blackboard-strategy.js";
import { blackboard } from "./blackboard.js";

/** The strategy table, cell by cell: effective limits after the component ceilings. */
const EXPECTED: Record<StrategyProfile, Omit<EffectiveLimits, "tool_attempts">> = {
  CONSERVATIVE: { max_steps: 5, max_retries: 2, max_rewrites: 1, execution: "tool_only" },
  EXPLORATORY: { max_steps: 15, max_retries: 3, max_rewrites: 3, execution: "parallel" },
  FALLBACK: { max_steps: 10, max_retries: 4, max_rewrites: 2, execution: "sequential" },
};

const cells = (Object.keys(EXPECTED) as StrategyProfile[]).flatMap((profile) =>
  (["max_steps", "max_retries", "max_rewrites", "execution"] as const).map((field) => ({
    profile,
    field,
    value: EXPECTED[profile][field],
  })),
);

describe("strategy profiles: one test per cell", () => {
  it.each(cells)("$profile $field is $value", ({ profile, field, value }) => {
    expect(effectiveLimits(profile)[field]).toBe(value);
  });
});

describe("strategy profiles: ceilings and shared limits", () => {
  it("clamps a profile's steps to the decision agent's ceiling of 20", () => {
    expect(effectiveLimits({ max_steps: 30, max_retries: 1, max_rewrites: 1, execution: "tool_only" }).max_steps).toBe(
      20,
    );
    expect(COMPONENT_CEILINGS.max_steps).toBe(20);
  });

  it("clamps a profile's rewrites to the ceiling of 5", () => {
    expect(
      effectiveLimits({ max_steps: 5, max_retries: 1, max_rewrites: 9, execution: "tool_only" }).max_rewrites,
    ).toBe(5);
    expect(COMPONENT_CEILINGS.max_rewrites).toBe(5);
  });

  it("keeps the smaller of profile and ceiling, never raising a profile's own limit", () => {
    expect(effectiveLimits({ max_steps: 3, max_retries: 7, max_rewrites: 2, execution: "parallel" })).toMatchObject({
      max_steps: 3,
      max_retries: 7,
      max_rewrites: 2,
    });
  });

  it.each(Object.keys(STRATEGY_PROFILES) as StrategyProfile[])(
    "%s: one tool call gets at most 3 attempts in all",
    (profile) => {
      expect(effectiveLimits(profile).tool_attempts).toBe(3);
    },
  );

  it("runs tool only, tool+rag+web at once, or tool then rag then web", () => {
    expect(MODE_STRATEGIES.tool_only).toEqual(["tool"]);
    expect(MODE_STRATEGIES.parallel).toEqual(["tool", "rag", "web"]);
    expect(MODE_STRATEGIES.sequential).toEqual(["tool", "rag", "web"]);
  });

  it("keeps conservative retrieval local and lets the others search the web", () => {
    expect(retrievalSources("CONSERVATIVE")).toEqual(["memory", "corpus"]);
    expect(retrievalSources("EXPLORATORY")).toEqual(["memory", "corpus", "web"]);
    expect(retrievalSources("FALLBACK")).toEqual(["memory", "corpus", "web"]);
  });

  it("takes the profile from the session options, CONSERVATIVE by default, and records its effective limits", () => {
    expect(DEFAULT_STRATEGY_PROFILE).toBe("CONSERVATIVE");
    expect(blackboard.init("What is 2 + 2?", {})).toMatchObject({
      strategy_profile: "CONSERVATIVE",
      limits: effectiveLimits("CONSERVATIVE"),
    });
    expect(blackboard.init("What is 2 + 2?", { strategy_profile: "FALLBACK" })).toMatchObject({
      strategy_profile: "FALLBACK",
      limits: effectiveLimits("FALLBACK"),
    });
  });
});
