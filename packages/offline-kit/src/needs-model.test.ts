import { describe, expect, it } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { needsModel } from "./needs-model.js";

describe("needsModel", () => {
  it("throws needs_model, not retryable, naming the agent, what it cannot do and the configuration hint", () => {
    const offline = needsModel("writing agent", "write a piece");
    let thrown: unknown;
    try {
      offline({}, { configHint: "Set AGENTMESH_LLM_BASE_URL." });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AgentmeshError);
    expect(thrown).toMatchObject({
      code: "needs_model",
      retryable: false,
      message:
        "The writing agent needs a language model: without one it cannot write a piece. Set AGENTMESH_LLM_BASE_URL.",
    });
  });
});
