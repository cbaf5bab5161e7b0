import { describe, expect, it } from "vitest";
import { OPS, type ToolCallOutcome } from "@agentmesh/contracts";
import { criticChain, MAX_REFUSALS } from "./critic-chain.js";
import { CRITIC_CHAIN_AGENT_TOOLS, MINIMAL_CRITIC_CHAIN_SETTINGS } from "./critic-chain-tools.js";
import { DEFAULTS, QUESTION, eventsOf, failure, harness, inputs, onlyTask, out, recordEvents } from "./testing.js";

type H = ReturnType<typeof harness>;

/** An agent turn that calls `tool` (the flat reply of researcher.research and expert.answer). */
const call = (tool: string, args: Record<string, unknown>) => ({
  action: "tool",
  tool,
  arguments_json: JSON.stringify(args),
});
/** What the executor answers for a call. */
const outcome = (tool: string, content: string, ok = true): ToolCallOutcome => ({
  tool,
  ok,
  content,
  error: ok ? null : { code: "invalid_tool_input", message: content, retryable: false },
  latency_ms: 4,
  attempts: 1,
  citations: [],
  code: null,
});

/** Start, plan (no research), approve: the expert's first turn is awaited. */
function toExpert(h: H) {
  h.apply(inputs.start());
  h.reply(out.plan([], ["Compute it"]));
  return h.reply(out.approve());
}

describe("critic-chain tool loops: researcher and expert run tools as executor.call tasks", () => {
  it("offers the expert its served tools, runs its calculator call as an executor.call task, and asks it again with the observation", () => {
    const h = harness();
    const events = recordEvents(h);
    const first = onlyTask(toExpert(h));
    expect([first.role, first.op]).toEqual(["expert", "answer"]);
    expect((first.input.tools as Array<{ name: string }>).map((t) => t.name)).toEqual([
      "calculator",
      "run_python",
      "run_js",
      "corpus_search",
    ]);
    expect(first.input).toMatchObject({ observations: [], tool_rounds_left: 5, rejected_answer: null });

    const exec = onlyTask(h.reply(call("calculator", { expression: "6 * 7" })));
    expect([exec.role, exec.op]).toEqual(["executor", "call"]);
    expect(exec.input).toEqual({
      tool: "calculator",
      arguments: { expression: "6 * 7" },
      allowed: ["calculator", "run_python", "run_js", "corpus_search"],
      limits: { max_attempts: 2, timeout_ms: 30_000 },
    });
    expect(h.awaited()).toMatchObject({ role: "executor", op: "call", tag: "tool" });
    expect(h.state.data.current_step).toBe("expert");
    expect(h.state.data.expert_state?.pending_call).toEqual({
      id: "call-1",
      tool: "calculator",
      arguments: { expression: "6 * 7" },
    });

    const again = onlyTask(h.reply(outcome("calculator", "42")));
    expect([again.role, again.op]).toEqual(["expert", "answer"]);
    expect(again.input).toMatchObject({
      observations: [{ tool: "calculator", arguments: { expression: "6 * 7" }, ok: true, content: "42" }],
      tool_rounds_left: 4,
    });
    expect(again.input.message).toEqual(first.input.message);
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: "tool_call", id: "call-1", tool: "calculator", args: { expression: "6 * 7" } }),
        expect.objectContaining({ type: "tool_result", id: "call-1", tool: "calculator", ok: true, content: "42" }),
        expect.objectContaining({ type: "stage", name: "expert_tools", status: "completed" }),
      ]),
    );

    const critic = onlyTask(h.reply(out.answer("6 * 7 = 42", "the calculator said 42")));
    expect([critic.role, critic.op]).toEqual(["critic", "review_answer"]);
    expect(h.state.data).toMatchObject({ expert_answer: "6 * 7 = 42", tool_calls: 1 });
    expect(h.state.data.expert_state).toMatchObject({ turns: 2, tool_rounds: 1, refusals: 0, pending_call: null });
  });

  it("hands the finalizer every tool call and what came of it, for the trace", () => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan(["r1"], ["e1"]));
    h.reply(out.approve());
    h.reply(call("corpus_search", { query: "r1" }));
    h.reply(outcome("corpus_search", "[1] a.md: passage"));
    h.reply(out.research("found"));
    h.reply(out.approve());
    h.reply(call("calculator", { expression: "1 / 0" }));
    h.reply(outcome("calculator", "invalid_tool_input: cannot evaluate: division by zero", false));
    h.reply(out.answer("I could not compute 1 / 0", "division by zero"));
    const fin = onlyTask(h.reply(out.approve()));
    expect(fin.input.tool_calls).toEqual([
      'researcher (step 1): corpus_search {"query":"r1"} returned: [1] a.md: passage',
      'expert: calculator {"expression":"1 / 0"} failed: invalid_tool_input: cannot evaluate: division by zero',
    ]);
  });

  it("bounds a turn at max_tool_rounds: at the bound no rounds are left, a further call is refused and the agent is asked to answer", () => {
    const h = harness({
      defaults: { ...DEFAULTS, criticChain: { tools: MINIMAL_CRITIC_CHAIN_SETTINGS.tools, max_tool_rounds: 2 } },
    });
    toExpert(h);
    for (const n of [1, 2]) {
      expect(onlyTask(h.reply(call("calculator", { expression: `${n} + 1` }))).op).toBe("call");
      const next = onlyTask(h.reply(outcome("calculator", String(n + 1))));
      expect(next.input.tool_rounds_left).toBe(2 - n);
    }
    const refused = h.reply(call("calculator", { expression: "9 + 1" }));
    const asked = onlyTask(refused);
    expect([asked.role, asked.op]).toEqual(["expert", "answer"]);
    expect(asked.input.tool_rounds_left).toBe(0);
    expect((asked.input.observations as Array<{ ok: boolean; content: string }>).at(-1)).toMatchObject({
      ok: false,
      content: expect.stringContaining("No tool rounds are left"),
    });
    expect(eventsOf(refused).some((e) => e.type === "tool_call")).toBe(false);
    expect(h.state.data.tool_calls).toBe(2);
    expect(onlyTask(h.reply(out.answer("9 + 1 = 10", "r"))).op).toBe("review_answer");
  });

  it("with max_tool_rounds 0 the agent is told no rounds are left from its first turn", () => {
    const h = harness({ defaults: { ...DEFAULTS, criticChain: { tools: ["calculator"], max_tool_rounds: 0 } } });
    expect(onlyTask(toExpert(h)).input).toMatchObject({ tool_rounds_left: 0, tools: [{ name: "calculator" }] });
  });

  it("refuses a tool the agent was not offered; past MAX_REFUSALS refusals the turn fails and the finalizer reports it", () => {
    const h = harness({ defaults: { ...DEFAULTS, criticChain: { tools: ["calculator"], max_tool_rounds: 5 } } });
    toExpert(h);
    for (let n = 1; n <= MAX_REFUSALS; n++) {
      const asked = onlyTask(h.reply(call("web_search", { query: "x" })));
      expect(asked.op).toBe("answer");
      expect((asked.input.observations as Array<{ content: string }>).at(-1)?.content).toContain(
        '"web_search" is not one you were offered (calculator)',
      );
    }
    const fin = onlyTask(h.reply(call("web_search", { query: "x" })));
    expect([fin.role, fin.op]).toEqual(["finalizer", "finalize"]);
    expect(h.state.data).toMatchObject({ error_component: "expert", retry_count: 0 });
    expect(h.state.data.error).toContain("tool calls it may not make");
  });

  it("a failed executor task is a failed call the agent is told about, not a failure of the session", () => {
    const h = harness();
    toExpert(h);
    h.reply(call("run_python", { code: "print(1)" }));
    expect(h.awaited()).toMatchObject({ role: "executor", op: "call" });
    const asked = onlyTask(h.fail(failure("timeout", true, "the sandbox did not answer")));
    expect(asked.op).toBe("answer");
    expect(asked.input.observations).toEqual([
      {
        tool: "run_python",
        arguments: { code: "print(1)" },
        ok: false,
        content: "timeout: the sandbox did not answer",
      },
    ]);
    expect(h.state.data.retry_count).toBe(0);
  });

  it("keeps each research step's subgraph state in researcher_states under its index, cut short once approved", () => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan(["Find CRISPR's definition", "Find its inventors"], ["Combine"]));
    const research = onlyTask(h.reply(out.approve()));
    expect((research.input.tools as Array<{ name: string }>).map((t) => t.name)).toEqual(
      CRITIC_CHAIN_AGENT_TOOLS.researcher.filter((t) => t !== "web_search"),
    );
    const exec = onlyTask(h.reply(call("corpus_search", { query: "CRISPR definition" })));
    expect(exec.input).toMatchObject({
      tool: "corpus_search",
      allowed: ["corpus_search", "calculator", "run_python", "run_js"],
    });
    h.reply(outcome("corpus_search", `[1] crispr.md: ${"x".repeat(1500)}`));
    expect(h.state.data.researcher_states["0"]).toMatchObject({
      step_id: 0,
      research_step: "Find CRISPR's definition",
      tool_rounds: 1,
      turns: 2,
    });
    h.reply({ result: "CRISPR is a gene-editing tool." });
    const second = onlyTask(h.reply(out.approve()));
    expect(second.input).toMatchObject({ research_step: "Find its inventors", observations: [], tool_rounds_left: 5 });
    const settled = h.state.data.researcher_states["0"]!;
    expect(settled.observations[0]!.content.length).toBeLessThanOrEqual(300);
    expect(h.state.data.researcher_states["1"]).toMatchObject({ step_id: 1, turns: 1, tool_rounds: 0 });
  });

  it("takes an executor result only for a tool call in flight, and the agent's result only while none is", () => {
    const h = harness();
    toExpert(h);
    const stray = criticChain.decide(h.state.data, {
      kind: "result",
      role: "executor",
      op: "call",
      attempt: 0,
      tag: "tool",
      output: outcome("calculator", "1"),
    });
    expect(stray.control.kind).toBe("fail");
    h.reply(call("calculator", { expression: "1 + 1" }));
    const early = criticChain.decide(h.state.data, {
      kind: "result",
      role: "expert",
      op: "answer",
      attempt: 0,
      output: OPS.expert.answer.response.parse(out.answer("2", "r")),
    });
    expect(early.control.kind).toBe("fail");
  });
});

describe("critic-chain retries hand the agent its rejected work with the critic's feedback", () => {
  it("planner: the rejected plan", () => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan(["r1"], ["e1"]));
    const again = onlyTask(h.reply(out.reject("Add a step on the inventors.")));
    expect([again.role, again.op]).toEqual(["planner", "plan"]);
    expect(again.input).toMatchObject({
      feedback: "Add a step on the inventors.",
      rejected_plan: { research_steps: ["r1"], expert_steps: ["e1"] },
    });
    expect(again.input.message.content).toBe("Add a step on the inventors.");
  });

  it("researcher: the rejected result, and its earlier tool results", () => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan(["r1"], ["e1"]));
    h.reply(out.approve());
    h.reply(call("corpus_search", { query: "r1" }));
    h.reply(outcome("corpus_search", "[1] a.md: passage"));
    h.reply(out.research("thin result"));
    const again = onlyTask(h.reply(out.reject("Cite the passage.")));
    expect([again.role, again.op]).toEqual(["researcher", "research"]);
    expect(again.input).toMatchObject({
      feedback: "Cite the passage.",
      rejected_result: "thin result",
      tool_rounds_left: 5,
    });
    expect(again.input.observations).toHaveLength(1);
    expect(again.input.message).toMatchObject({ content: "Cite the passage.", step_id: 0 });
    expect(h.state.data.researcher_states["0"]).toMatchObject({ turns: 3, tool_rounds: 0 });
  });

  it("expert: the rejected answer and reasoning", () => {
    const h = harness();
    toExpert(h);
    h.reply(out.answer("about 40", "guessed"));
    const again = onlyTask(h.reply(out.reject("Compute it exactly.")));
    expect([again.role, again.op]).toEqual(["expert", "answer"]);
    expect(again.input).toMatchObject({
      feedback: "Compute it exactly.",
      rejected_answer: { expert_answer: "about 40", expert_reasoning: "guessed" },
    });
  });

  it("a first turn carries nothing rejected", () => {
    const h = harness();
    expect(onlyTask(h.apply(inputs.start())).input.rejected_plan).toBeNull();
  });
});

describe("critic-chain messages (the chain's message log)", () => {
  it("starts with the question and records each instruction and each agent's completion message", () => {
    expect(criticChain.init(QUESTION, {}).messages).toEqual([
      { sender: "user", receiver: "orchestrator", type: "question", content: QUESTION, step_id: null },
    ]);
    const h = harness();
    toExpert(h);
    h.reply(call("calculator", { expression: "1 + 1" }));
    h.reply(outcome("calculator", "2"));
    h.reply(out.answer("1 + 1 = 2", "calculator"));
    const kinds = h.state.data.messages.map((m) => `${m.sender}>${m.receiver}:${m.type}`);
    expect(kinds).toEqual([
      "user>orchestrator:question",
      "orchestrator>planner:instruction",
      "planner>orchestrator:response",
      "orchestrator>critic_planner:instruction",
      "critic_planner>orchestrator:response",
      "orchestrator>expert:instruction",
      "expert>orchestrator:response",
      "orchestrator>critic_expert:instruction",
    ]);
    expect(h.state.data.messages[5]?.content).toBe("Perform steps: Compute it");
  });

  it("copies the deployment's tools and rounds into the session at creation", () => {
    const d = criticChain.init(QUESTION, {}, [], {
      ...DEFAULTS,
      criticChain: { tools: ["calculator", "web_search"], max_tool_rounds: 3 },
    });
    expect(d).toMatchObject({
      tools_available: ["calculator", "web_search"],
      max_tool_rounds: 3,
      researcher_states: {},
      expert_state: null,
      tool_calls: 0,
    });
    expect(criticChain.init(QUESTION, {})).toMatchObject({
      tools_available: MINIMAL_CRITIC_CHAIN_SETTINGS.tools,
      max_tool_rounds: 5,
    });
  });
});
