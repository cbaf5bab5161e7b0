import { describe, expect, it } from "vitest";
import type { OpRequest } from "@agentmesh/contracts";
import { renderPlan } from "./role.js";

const base: OpRequest<"planner", "plan"> = {
  message: {
    sender: "orchestrator",
    receiver: "planner",
    type: "instruction",
    content: "Develop a logical plan to answer: What is CRISPR?",
    step_id: null,
  },
  question: "What is CRISPR?",
  feedback: null,
  rejected_plan: null,
};

describe("planner.plan (critic-chain): its prompt", () => {
  it("on a retry shows the rejected plan, numbered, beside the critic's feedback", () => {
    const prompt = renderPlan({
      ...base,
      message: { ...base.message, content: "Add a step on the inventors." },
      feedback: "Add a step on the inventors.",
      rejected_plan: { research_steps: ["Find a definition"], expert_steps: ["Define it", "Summarise"] },
    });
    expect(prompt).toContain(
      "Your earlier plan, which the critic rejected:\nResearch steps:\n1. Find a definition\nExpert steps:\n1. Define it\n2. Summarise",
    );
    expect(prompt).toContain("Critic feedback to address: Add a step on the inventors.");
  });

  it("a first plan shows neither", () => {
    const prompt = renderPlan(base);
    expect(prompt).toBe("Question: What is CRISPR?\n\nInstruction: Develop a logical plan to answer: What is CRISPR?");
  });
});
