import { describe, expect, it } from "vitest";
import { EMPTY_MEMORY, ROLES, type OpRequest, type PerceptionSnapshot, type ToolInfo } from "@agentmesh/contracts";
import { intentOf } from "@agentmesh/offline-kit";
import { argsFor, decideOffline as decide } from "./offline.js";

const TOOLS: ToolInfo[] = [
  {
    name: "calculator",
    description: "Evaluate math",
    input_schema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
  },
  {
    name: "corpus_search",
    description: "Search documents",
    input_schema: {
      type: "object",
      properties: { query: { type: "string", maxLength: 500 }, limit: { type: "integer" } },
      required: ["query"],
    },
  },
  {
    name: "web_search",
    description: "Search the web",
    input_schema: { type: "object", properties: { query: { type: "string", maxLength: 400 } }, required: ["query"] },
  },
  {
    name: "test_flaky",
    description: "Echo",
    input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
];

// The decision agent reads perception's intent; the rest of the snapshot does not steer its offline plan.
const snapshot = (question: string): PerceptionSnapshot => ({
  entities: [],
  intent: intentOf(question),
  constraints: [],
  sub_goals: [],
  confidence: 0.5,
  suspicious_patterns: [],
  goal_satisfied: null,
  notes: "",
});

function planRequest(
  question: string,
  over: Partial<OpRequest<"decision", "plan">> = {},
): OpRequest<"decision", "plan"> {
  return {
    question,
    perception: snapshot(question),
    retrieval: null,
    memory: EMPTY_MEMORY,
    tools: TOOLS,
    max_steps: 5,
    strategy_profile: "CONSERVATIVE",
    previous_plan: null,
    failed_step_index: null,
    rewrite_suggestion: null,
    ...over,
  };
}

describe("offline decision", () => {
  it("plans arithmetic as calculator then summarize, with the whole expression", () => {
    const plan = decide(planRequest("What is 123456789 * 987654321?"));
    expect(plan.steps.map((s) => s.tool)).toEqual(["calculator", "summarize"]);
    expect(plan.steps[0]?.args).toEqual([{ name: "expression", value: "123456789 * 987654321" }]);
    expect(ROLES.decision.plan.response.safeParse(plan).success).toBe(true);
  });

  it("plans a lookup as corpus_search with a keyword query; web_search when corpus_search is banned; needs_model with neither", () => {
    const q = "What is the daily meal allowance?";
    const plan = decide(planRequest(q));
    expect(plan.steps.map((s) => s.tool)).toEqual(["corpus_search", "summarize"]);
    expect(plan.steps[0]?.args).toEqual([{ name: "query", value: "daily meal allowance" }]);
    const banned = { ...EMPTY_MEMORY, banned_tools: [{ tool: "corpus_search", reason: "tool_not_found" }] };
    expect(decide(planRequest(q, { memory: banned })).steps[0]?.tool).toBe("web_search");
    const both = {
      ...banned,
      banned_tools: [...banned.banned_tools, { tool: "web_search", reason: "tool_unavailable" }],
    };
    expect(() => decide(planRequest(q, { memory: both }))).toThrow(expect.objectContaining({ code: "needs_model" }));
  });

  it("runs a tool the question names, greets without tools, and needs a model otherwise", () => {
    const named = decide(planRequest("Use test_flaky to echo 'hello mesh'"));
    expect(named.steps[0]).toMatchObject({ tool: "test_flaky", args: [{ name: "text", value: "hello mesh" }] });
    expect(decide(planRequest("Hello there")).steps.map((s) => s.tool)).toEqual(["summarize"]);
    expect(() => decide(planRequest("Write me a poem about the sea"))).toThrow(
      expect.objectContaining({ code: "needs_model" }),
    );
  });

  it("respects max_steps: one step left means only summarize", () => {
    expect(decide(planRequest("What is 2 + 2?", { max_steps: 1 })).steps.map((s) => s.tool)).toEqual(["summarize"]);
  });

  it("on a rewrite follows a suggestion that names a tool, folds in a person's answer, and otherwise needs a model", () => {
    const q = "What is 6 * 7?";
    const previous = {
      steps: [
        {
          description: "Search the corpus",
          tool: "corpus_search",
          args: [{ name: "query", value: "6 7" }],
          expected_outcome: "",
        },
        { description: "Write the answer", tool: "summarize", args: [], expected_outcome: "" },
      ],
      rationale: "",
    };
    const rewrite = decide(
      planRequest(q, {
        previous_plan: previous,
        failed_step_index: 0,
        rewrite_suggestion: "Use calculator to evaluate 6 * 7 exactly instead of corpus_search.",
      }),
    );
    expect(rewrite.steps.map((s) => s.tool)).toEqual(["calculator", "summarize"]);
    const lookup = "Where are samples stored?";
    const reply = decide(
      planRequest(lookup, {
        previous_plan: previous,
        failed_step_index: 0,
        rewrite_suggestion: 'The person was asked "Which room?" and answered: the cold room',
      }),
    );
    expect(reply.steps[0]).toMatchObject({
      tool: "corpus_search",
      args: [{ name: "query", value: "samples stored cold room" }],
    });
    expect(() =>
      decide(
        planRequest(q, {
          previous_plan: previous,
          failed_step_index: 0,
          rewrite_suggestion: "It failed; choose another tool.",
        }),
      ),
    ).toThrow(expect.objectContaining({ code: "needs_model" }));
  });

  it("derives arguments from a tool's schema, or gives up when a required one cannot be found", () => {
    const number: ToolInfo = {
      name: "dice",
      description: "Roll",
      input_schema: { type: "object", properties: { sides: { type: "integer" } }, required: ["sides"] },
    };
    expect(argsFor(number, "Roll a 20 sided die")).toEqual([{ name: "sides", value: 20 }]);
    expect(argsFor(number, "Roll a die")).toBeNull();
    expect(argsFor(TOOLS[0] as ToolInfo, "What is the capital of France?")).toBeNull();
  });
});
