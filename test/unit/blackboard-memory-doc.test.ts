import { describe, expect, test } from "vitest";
import { BLACKBOARD_LIMITS } from "@agentmesh/contracts";
import { ENV_VARS } from "@agentmesh/service-kit";
import { read } from "./test-support.js";

// The blackboard page states the memory's rules with the numbers and settings the code uses.

const page = read("docs/workflows/blackboard.md");
const section = page.slice(page.indexOf("## Memory: behavioural patterns and long-term references"));

describe("docs/workflows/blackboard.md: the memory's patterns and long-term references", () => {
  test("names each long-term reference setting with its default as ENV_VARS has it", () => {
    for (const name of ["AGENTMESH_LONG_TERM_REFS_MAX", "AGENTMESH_LONG_TERM_REFS_TTL_MS"]) {
      const v = ENV_VARS.find((e) => e.name === name);
      expect(v, name).toBeDefined();
      expect(section).toContain(`\`${name}\` (default ${v?.name.endsWith("_MAX") ? "and most " : ""}${v?.default}`);
    }
  });

  test("states the bounds the contracts enforce", () => {
    expect(section).toContain(`at most ${BLACKBOARD_LIMITS.maxPatternsPerReport} behavioural patterns`);
    expect(section).toContain(`the latest ${BLACKBOARD_LIMITS.maxPatterns};`);
    expect(section).toContain(`The memory holds the latest ${BLACKBOARD_LIMITS.maxLongTermRefs} (each once)`);
    expect(section).toContain(`hallucination risk over ${BLACKBOARD_LIMITS.defaultMaxHallucinationRisk}`);
  });
});
