import { describe, expect, it } from "vitest";
import { Capability } from "@agentmesh/contracts";
import { pickCapabilities } from "./capabilities.js";

const ALL = Capability.options;

describe("offline capability planning (the planner picks by keywords)", () => {
  it("picks every capability the question cues, in the tag order", () => {
    expect(
      pickCapabilities("What are the latest clinical trials for HER2 and which pathways does it interact with?", ALL),
    ).toEqual(["graph", "biomcp", "web"]);
    expect(pickCapabilities("According to our documents, which drugs target BRCA1 mutations?", ALL)).toEqual([
      "rag",
      "biomcp",
    ]);
    expect(pickCapabilities("Use llamaindex to look this up", ALL)).toEqual(["llama_mcp"]);
  });

  it("matches whole words and phrases only", () => {
    expect(pickCapabilities("Explain the webbing of a trialist's genealogy", ALL)).toEqual(["graph", "rag"]);
    expect(pickCapabilities("Is there news about this?", ALL)).toEqual(["web"]);
  });

  it("answers a greeting or a vague query with chitchat", () => {
    expect(pickCapabilities("Hello there!", ALL)).toEqual(["chitchat"]);
    expect(pickCapabilities("help", ALL)).toEqual(["chitchat"]);
  });

  it("gives an uncued question the local-knowledge specialists the deployment has, else chitchat", () => {
    expect(pickCapabilities("Explain how HER2 status affects prognosis", ALL)).toEqual(["graph", "rag"]);
    expect(pickCapabilities("Explain how HER2 status affects prognosis", ["rag", "web"])).toEqual(["rag"]);
    expect(pickCapabilities("Explain how HER2 status affects prognosis", ["web"])).toEqual(["chitchat"]);
  });

  it("never picks what the deployment cannot serve", () => {
    expect(pickCapabilities("latest drug trials", ["web"])).toEqual(["web"]);
    expect(pickCapabilities("latest drug trials", [])).toEqual(["chitchat"]);
  });
});
