import { describe, expect, it } from "vitest";
import { ROLES, type OpRequest } from "@agentmesh/contracts";
import { answerOffline, renderAnswer } from "./answer.js";

const base: OpRequest<"expert", "answer"> = {
  message: {
    sender: "orchestrator",
    receiver: "expert",
    type: "instruction",
    content: "Perform steps: Compute it",
    step_id: null,
  },
  question: "What is 6 * 7?",
  expert_steps: ["Compute it"],
  research_steps: [],
  research_results: [],
  feedback: null,
  rejected_answer: null,
  tools: [{ name: "calculator", description: "Evaluate a math expression exactly." }],
  observations: [],
  tool_rounds_left: 5,
};
const ctx = { configHint: "Set AGENTMESH_LLM_BASE_URL." };
const reply = ROLES.expert.answer.response;

describe("expert.answer: its prompt", () => {
  it("on a retry shows the rejected answer and its reasoning beside the critic's feedback", () => {
    const prompt = renderAnswer({
      ...base,
      feedback: "State the exact value.",
      rejected_answer: { expert_answer: "about 40", expert_reasoning: "a guess" },
    });
    expect(prompt).toContain("Your earlier answer, which the critic rejected:\nabout 40\n\nIts reasoning:\na guess");
    expect(prompt).toContain("Critic feedback: State the exact value.");
    expect(renderAnswer(base)).not.toContain("rejected");
  });

  it("offers the tools while rounds are left and shows what they returned", () => {
    const prompt = renderAnswer({
      ...base,
      tool_rounds_left: 2,
      observations: [{ tool: "calculator", arguments: { expression: "6 * 7" }, ok: true, content: "42" }],
    });
    expect(prompt).toContain("Tool rounds left in this turn: 2");
    expect(prompt).toContain('calculator {"expression":"6 * 7"} returned: 42');
    expect(renderAnswer({ ...base, tool_rounds_left: 0 })).toContain(
      "No tool rounds are left in this turn: answer now",
    );
  });
});

describe("expert.answer offline: arithmetic through the calculator tool", () => {
  it("asks the calculator first, with the normalised expression", () => {
    const turn = reply.parse(answerOffline(base, ctx));
    expect(turn).toMatchObject({ action: "tool", tool: "calculator", expert_answer: "" });
    expect(JSON.parse(turn.arguments_json)).toEqual({ expression: "6 * 7" });
  });

  it("answers with the calculator's value, exact below 64 digits and approximate when it fills them", () => {
    const observed = (content: string, ok = true) => ({
      ...base,
      observations: [{ tool: "calculator", arguments: { expression: "6 * 7" }, ok, content }],
    });
    expect(answerOffline(observed("42"), ctx)).toMatchObject({
      action: "answer",
      expert_answer: "6 * 7 = 42",
      expert_reasoning: expect.stringContaining("with the calculator tool"),
    });
    const long = `0.${"3".repeat(64)}`;
    expect(answerOffline(observed(long), ctx).expert_answer).toBe(`6 * 7 ≈ ${long}`);
    expect(
      answerOffline(observed("invalid_tool_input: cannot evaluate: division by zero", false), ctx).expert_answer,
    ).toBe("I could not compute 6 * 7: division by zero.");
  });

  it("gives no value when the calculator is not offered (it never computes by itself)", () => {
    const turn = answerOffline({ ...base, tools: [] }, ctx);
    expect(turn.action).toBe("answer");
    expect(turn.expert_answer).toBe("I could not compute 6 * 7: the calculator tool is not available to me here.");
    expect(turn.expert_answer).not.toContain("42");
  });

  it("answers a question that is not arithmetic without a tool", () => {
    expect(answerOffline({ ...base, question: "Who wrote Hamlet?" }, ctx)).toMatchObject({
      action: "answer",
      expert_answer: expect.stringContaining("needs a language model"),
    });
  });
});
