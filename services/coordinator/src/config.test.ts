import { describe, expect, test } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { loadCoordinatorConfig } from "./config.js";

describe("coordinator config", () => {
  test("every budget has a server ceiling, by default and from the environment", () => {
    expect(loadCoordinatorConfig({}).defaults.ceilings).toEqual({ max_steps: 500, max_tokens: 2_000_000, max_cost_usd: 10, max_wall_ms: 7_200_000 });
    const cfg = loadCoordinatorConfig({
      AGENTMESH_MAX_STEPS_CEILING: "40", AGENTMESH_MAX_TOKENS_CEILING: "5000", AGENTMESH_MAX_COST_USD_CEILING: "0.5", AGENTMESH_MAX_WALL_MS_CEILING: "60000",
      AGENTMESH_MAX_STEPS: "20",
    });
    expect(cfg.defaults.ceilings).toEqual({ max_steps: 40, max_tokens: 5000, max_cost_usd: 0.5, max_wall_ms: 60_000 });
    expect(cfg.defaults.budgets.max_steps).toBe(20);
  });

  test("a default above its ceiling is a configuration error naming both", () => {
    const load = () => loadCoordinatorConfig({ AGENTMESH_MAX_STEPS: "100", AGENTMESH_MAX_STEPS_CEILING: "50", AGENTMESH_MAX_COST_USD: "3", AGENTMESH_MAX_COST_USD_CEILING: "1" });
    expect(load).toThrow(AgentmeshError);
    expect(load).toThrow(/max_steps 100 is above its ceiling 50[\s\S]*max_cost_usd 3 is above its ceiling 1/);
  });
});
