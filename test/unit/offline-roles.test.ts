import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  EMPTY_MEMORY,
  listOps,
  ROLES,
  type OpRequest,
  type OpResponse,
  type OrchestratorMessage,
  type ToolObservation,
} from "@agentmesh/contracts";
import { createCalculatorTool, createSafeExecutor, createToolRegistry } from "@agentmesh/tools";
import { loadRoles } from "@agentmesh/agent";
import { offlineHandlersOf, setUpRole } from "@agentmesh/agent-kit";
import { createLogger } from "@agentmesh/service-kit";
import { createOfflineModel, type ModelPort } from "@agentmesh/llm";

// The offline engine with the roles' own offline behaviours injected, as an agent process builds it.
const roles = (
  await loadRoles(["planner", "critic", "researcher", "expert", "finalizer", "perception", "decision"])
).map((r) => r.module);
// a role built from its environment (the researcher's search tools) is built without a corpus: these ops never search
const definitions = (
  await Promise.all(
    roles.map((m) =>
      setUpRole(m, { AGENTMESH_CORPUS_DIR: "/nonexistent/corpus" }, createLogger({ service: "test", level: "silent" })),
    ),
  )
).flatMap((s) => s.agents);
const model = createOfflineModel({ handlers: offlineHandlersOf(definitions) });
const message = (receiver: string, content: string): OrchestratorMessage => ({
  sender: "orchestrator",
  receiver,
  type: "instruction",
  content,
  step_id: null,
});

async function call<R extends keyof typeof ROLES, O extends keyof (typeof ROLES)[R] & string>(
  role: R,
  op: O,
  input: OpRequest<R, O>,
  port: ModelPort = model,
): Promise<OpResponse<R, O>> {
  const def = (ROLES[role] as Record<string, { response: z.ZodType }>)[op]!;
  const reply = await port.complete({
    role,
    op,
    taskId: `t-${role}-${op}`,
    system: "",
    prompt: "",
    input,
    schema: def.response,
    schemaName: op,
  });
  expect(reply.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 });
  expect(reply).toMatchObject({ model: "offline", tier: "fast", latencyMs: 0 });
  // The contracts' response schema is the acceptance test for every offline answer.
  def.response.parse(reply.output);
  return reply.output as OpResponse<R, O>;
}

// The real calculator tool behind the safe executor, as the executor role runs it for an executor.call.
const calculator = createCalculatorTool({ allowedRoles: ["expert"], timeoutMs: 60_000 });
const tools = createSafeExecutor({ registry: createToolRegistry([calculator.tool]), maxCallsPerSession: 1000 });
afterAll(() => calculator.pool.close());
// The calculator's worker loads mathjs once; on a busy machine that takes longer than one test may.
beforeAll(
  () =>
    tools.call({
      tool: "calculator",
      args: { expression: "1 + 1" },
      role: "expert",
      sessionId: "warm-up",
      taskId: "t",
    }),
  60_000,
);
const CALCULATOR = { name: "calculator", description: "Evaluate a math expression exactly." };

/** The calculator's answer as the expert's next turn sees it (the executor's content: the value, or `<code>: <message>`). */
async function calculate(args: Record<string, unknown>): Promise<ToolObservation> {
  const r = await tools.call({ tool: "calculator", args, role: "expert", sessionId: "offline-roles", taskId: "t" });
  return {
    tool: "calculator",
    arguments: args,
    ok: r.ok,
    content: r.ok ? String((r.output as { result: string }).result) : `${r.error.code}: ${r.error.message}`,
  };
}

/** The expert's turns with the calculator, as the workflow runs them: each tool call is answered and the expert asked again. */
async function expertTurns(
  input: Omit<OpRequest<"expert", "answer">, "tools" | "observations" | "tool_rounds_left" | "rejected_answer">,
  port: ModelPort = model,
) {
  const observations: ToolObservation[] = [];
  for (let round = 0; ; round++) {
    const turn = await call(
      "expert",
      "answer",
      { ...input, rejected_answer: null, tools: [CALCULATOR], observations, tool_rounds_left: 5 - round },
      port,
    );
    if (turn.action === "answer") return { ...turn, calls: observations.length, observations };
    expect(turn.tool).toBe("calculator");
    observations.push(await calculate(JSON.parse(turn.arguments_json) as Record<string, unknown>));
  }
}

/** Runs one pass of the critic chain for a question, as the coordinator would. */
async function chain(question: string) {
  const plan = await call("planner", "plan", {
    message: message("planner", `Develop a logical plan to answer: ${question}`),
    question,
    feedback: null,
    rejected_plan: null,
  });
  const planVerdict = await call("critic", "review_plan", {
    message: message("critic", "Review plan"),
    question,
    ...plan,
  });
  const { calls, observations, ...expert } = await expertTurns({
    message: message("expert", `Perform steps: ${plan.expert_steps.join(" ")}`),
    question,
    expert_steps: plan.expert_steps,
    research_steps: plan.research_steps,
    research_results: [],
    feedback: null,
  });
  const answerVerdict = await call("critic", "review_answer", {
    message: message("critic", "Review answer"),
    question,
    ...expert,
  });
  const final = await call("finalizer", "finalize", {
    message: message("finalizer", "Generate final answer and reasoning trace"),
    question,
    ...expert,
    research_results: [],
    error: null,
    error_component: null,
    tool_calls: observations.map(
      (o) => `expert: ${o.tool} ${JSON.stringify(o.arguments)} ${o.ok ? "returned" : "failed"}: ${o.content}`,
    ),
  });
  return { plan, planVerdict, expert, answerVerdict, final, calls };
}

// Each chain calls the calculator worker, which a loaded machine may answer slowly.
describe("offline engine: arithmetic", { timeout: 30_000 }, () => {
  it.each([
    ["What is 0.1 + 0.2?", "0.3"],
    ["What is 123456789012345678 * 9?", "1111111101111111102"],
    ["compute 2^64", "18446744073709551616"],
    ["What is 12.5 * (3 + 4)?", "87.5"],
    ["Calculate 7 / 8", "0.875"],
  ])("%s → %s, exactly, through the whole chain", async (question, expected) => {
    const run = await chain(question);
    expect(run.plan.research_steps).toEqual([]);
    expect(run.plan.expert_steps[0]).toMatch(/exactly/);
    expect(run.planVerdict.decision).toBe("approve");
    // the value comes from the calculator tool, called once
    expect(run.calls).toBe(1);
    expect(run.expert.expert_answer).toMatch(new RegExp(`= ${expected}$`));
    expect(run.expert.expert_reasoning).toContain(`Exact value: ${expected}.`);
    expect(run.answerVerdict.decision).toBe("approve");
    expect(run.final.final_answer).toBe(run.expert.expert_answer);
    expect(run.final.final_reasoning_trace).toContain(`Tools called: expert: calculator {"expression":`);
  });

  it("puts the normalised expression in the reasoning", async () => {
    const { expert } = await chain("what is 1,000 times 3?");
    expect(expert.expert_answer).toBe("1000 * 3 = 3000");
    expect(expert.expert_reasoning).toContain("normalised expression 1000 * 3");
  });

  it("marks a rounded result as approximate", async () => {
    const { expert } = await chain("What is 1/3?");
    expect(expert.expert_answer).toMatch(/^1 \/ 3 ≈ 0\.3{64}$/);
    expect(expert.expert_reasoning).toMatch(/rounded/);
  });

  it("explains an expression it will not evaluate instead of inventing a value", async () => {
    const { expert, calls } = await chain("What is 1/0?");
    expect(calls).toBe(1);
    expect(expert.expert_answer).toMatch(/could not compute 1 \/ 0: division by zero/);
  });

  it("the critic rejects a wrong arithmetic answer with the exact value", async () => {
    const verdict = await call("critic", "review_answer", {
      message: message("critic", "Review"),
      question: "What is 0.1 + 0.2?",
      expert_answer: "0.30000000000000004",
      expert_reasoning: "floating point",
    });
    expect(verdict.decision).toBe("reject");
    expect(verdict.feedback).toContain("0.3");
  });
});

describe("offline engine: honesty", { timeout: 30_000 }, () => {
  it("greets back and says what it can do", async () => {
    const { expert, final } = await chain("Hello there!");
    expect(expert.expert_answer).toMatch(/^Hello!/);
    expect(final.final_answer).toContain("AGENTMESH_LLM_BASE_URL");
  });

  it("asks for a specific question when the query is vague", async () => {
    for (const q of ["help", "something"]) {
      const { expert } = await chain(q);
      expect(expert.expert_answer).toMatch(/too vague/);
      expect(expert.expert_answer).toMatch(/specific question/);
    }
  });

  it("says a model is needed, how to configure one, and never invents a fact", async () => {
    const { plan, expert, final, answerVerdict } = await chain("What is the capital of France?");
    expect(plan.expert_steps[0]).toMatch(/needs a language model/);
    expect(expert.expert_answer).toMatch(/needs a language model/);
    expect(expert.expert_answer).toContain("AGENTMESH_LLM_BASE_URL");
    expect(final.final_answer).not.toMatch(/paris/i);
    expect(answerVerdict.decision).toBe("approve");
  });

  it("uses a configured hint", async () => {
    const port = createOfflineModel({ handlers: offlineHandlersOf(definitions, "Set MY_MODEL_URL.") });
    const out = await expertTurns(
      {
        message: message("expert", "x"),
        question: "Who wrote Hamlet?",
        expert_steps: ["x"],
        research_steps: [],
        research_results: [],
        feedback: null,
      },
      port,
    );
    expect(out.expert_answer).toContain("Set MY_MODEL_URL.");
    expect(out.expert_answer).not.toMatch(/shakespeare/i);
  });

  it("the researcher reports honestly that no source is available", async () => {
    const input = {
      message: message("researcher", "Research"),
      question: "What is CRISPR?",
      research_step: "Find the inventors of CRISPR",
      feedback: null,
      rejected_result: null,
      observations: [],
    };
    const out = await call("researcher", "research", { ...input, tools: [], tool_rounds_left: 5 });
    expect(out).toMatchObject({
      action: "answer",
      result: expect.stringMatching(/no research source is available offline/),
    });
    expect(out.result).not.toMatch(/doudna|charpentier/i);
  });

  it("is deterministic: the same input twice gives deep-equal replies", async () => {
    const questions = ["What is 2^64?", "hi", "help", "What is CRISPR?"];
    const first = await Promise.all(questions.map(chain));
    const second = await Promise.all(questions.map(chain));
    expect(second).toEqual(first);
  });
});

describe("offline engine: critics and finalizer", () => {
  const base = { message: message("critic", "Review"), question: "What is CRISPR?" };

  it("rejects ill-formed plans with actionable feedback and approves well-formed ones", async () => {
    const empty = await call("critic", "review_plan", { ...base, research_steps: [], expert_steps: [] });
    expect(empty).toMatchObject({ decision: "reject", feedback: expect.stringMatching(/no expert steps/) });
    const blank = await call("critic", "review_plan", {
      ...base,
      research_steps: ["   "],
      expert_steps: ["Define it"],
    });
    expect(blank).toMatchObject({ decision: "reject", feedback: expect.stringMatching(/blank/) });
    const dup = await call("critic", "review_plan", {
      ...base,
      research_steps: ["Define it"],
      expert_steps: ["define it"],
    });
    expect(dup).toMatchObject({ decision: "reject", feedback: expect.stringMatching(/repeats/) });
    const ok = await call("critic", "review_plan", {
      ...base,
      research_steps: ["Find a definition"],
      expert_steps: ["Define it"],
    });
    expect(ok.decision).toBe("approve");
  });

  it("rejects empty research and empty answers", async () => {
    const research = await call("critic", "review_research", {
      ...base,
      research_step: "Define CRISPR",
      research_result: " ",
    });
    expect(research).toMatchObject({ decision: "reject", feedback: expect.stringMatching(/empty/) });
    expect(
      (
        await call("critic", "review_research", {
          ...base,
          research_step: "Define",
          research_result: "A gene-editing tool.",
        })
      ).decision,
    ).toBe("approve");
    const noAnswer = await call("critic", "review_answer", { ...base, expert_answer: "", expert_reasoning: "r" });
    expect(noAnswer).toMatchObject({ decision: "reject", feedback: expect.stringMatching(/empty/) });
    const noReasoning = await call("critic", "review_answer", {
      ...base,
      expert_answer: "An answer",
      expert_reasoning: "",
    });
    expect(noReasoning).toMatchObject({ decision: "reject", feedback: expect.stringMatching(/reasoning/) });
  });

  it("the finalizer reports an error honestly", async () => {
    const out = await call("finalizer", "finalize", {
      message: message("finalizer", "Finalize"),
      question: "What is CRISPR?",
      expert_answer: "",
      expert_reasoning: "",
      research_results: [],
      tool_calls: [],
      error: "the model endpoint failed",
      error_component: "expert",
    });
    expect(out.final_answer).toMatch(/^The question could not be answered\. The expert step failed/);
    expect(out.final_reasoning_trace).toContain("the model endpoint failed");
  });

  it("answers every critic-chain op the contracts define", () => {
    expect(listOps().map((o) => `${o.role}.${o.op}`)).toEqual(
      expect.arrayContaining([
        "planner.plan",
        "critic.review_plan",
        "critic.review_research",
        "critic.review_answer",
        "researcher.research",
        "expert.answer",
        "finalizer.finalize",
      ]),
    );
  });
});

describe("offline engine: failures", () => {
  const req = { taskId: "t", system: "", prompt: "", schema: z.object({}), schemaName: "x" };

  it("an unknown role or op needs a model", async () => {
    await expect(model.complete({ ...req, role: "router", op: "route", input: {} })).rejects.toMatchObject({
      name: "AgentmeshError",
      code: "needs_model",
      retryable: false,
    });
    await expect(model.complete({ ...req, role: "planner", op: "toString", input: {} })).rejects.toMatchObject({
      code: "needs_model",
    });
  });

  it("input that fails the op's request schema is our bug", async () => {
    await expect(model.complete({ ...req, role: "planner", op: "plan", input: { question: 1 } })).rejects.toMatchObject(
      { code: "internal" },
    );
  });

  it("an aborted signal cancels", async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    await expect(
      model.complete({ ...req, role: "planner", op: "plan", input: {}, signal: ctrl.signal }),
    ).rejects.toMatchObject({ code: "cancelled" });
  });
});

describe("offline engine: blackboard roles", () => {
  it("is what the offline model answers for perception.perceive and decision.plan", async () => {
    const base = { taskId: "t.1.0.0", system: "", prompt: "" };
    const seen = await model.complete({
      ...base,
      role: "perception",
      op: "perceive",
      input: { kind: "query", query: "What is 2 + 2?" },
      schema: ROLES.perception.perceive.response,
      schemaName: "p",
    });
    expect(seen.output.intent).toBe("arithmetic");
    const tools = [
      {
        name: "calculator",
        description: "Evaluate math",
        input_schema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
      },
    ];
    const input = {
      question: "What is 2 + 2?",
      perception: seen.output,
      retrieval: null,
      memory: EMPTY_MEMORY,
      tools,
      max_steps: 5,
      strategy_profile: "CONSERVATIVE" as const,
      previous_plan: null,
      failed_step_index: null,
      rewrite_suggestion: null,
    };
    const plan = await model.complete({
      ...base,
      role: "decision",
      op: "plan",
      input,
      schema: ROLES.decision.plan.response,
      schemaName: "d",
    });
    expect(plan.output.steps[0]?.tool).toBe("calculator");
  });
});
