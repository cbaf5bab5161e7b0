import { describe, expect, it } from "vitest";
import { parseRoleModels } from "./model-config.js";

const defaults = { model: "gpt-4o-mini", temperature: 0.2, tier: "standard" as const };

describe("parseRoleModels (AGENTMESH_ROLE_MODELS)", () => {
  it("reads role and role.op keys, filling temperature and tier from the defaults", () => {
    expect(
      parseRoleModels(
        " critic=llama3.1@0/fast, expert=qwen2.5:32b@0.2/strong,planner.capabilities=gpt-4.1-mini@0/fast,finalizer=m ",
        defaults,
      ),
    ).toEqual({
      critic: { model: "llama3.1", temperature: 0, tier: "fast" },
      expert: { model: "qwen2.5:32b", temperature: 0.2, tier: "strong" },
      "planner.capabilities": { model: "gpt-4.1-mini", temperature: 0, tier: "fast" },
      finalizer: { model: "m", temperature: 0.2, tier: "standard" },
    });
    expect(parseRoleModels("", defaults)).toEqual({});
  });

  it("refuses, naming every bad entry at once, what it cannot read and roles or ops the registry lacks", () => {
    const read = () =>
      parseRoleModels("critic, nosuchrole=m, planner.nosuchop=m, planner.capabilities=m@3, expert=m/slow", defaults);
    expect(read).toThrow(/^AGENTMESH_ROLE_MODELS: /);
    expect(read).toThrow(/cannot read "critic"/);
    expect(read).toThrow(/"nosuchrole=m": no role nosuchrole/);
    expect(read).toThrow(/"planner.nosuchop=m": the planner role has no op nosuchop/);
    expect(read).toThrow(/"planner.capabilities=m@3": temperature must be between 0 and 2/);
    expect(read).toThrow(/cannot read "expert=m\/slow"/);
  });
});
