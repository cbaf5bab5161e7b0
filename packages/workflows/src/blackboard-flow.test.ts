import { describe, expect, it } from "vitest";
import { BLACKBOARD_LIMITS, type WireError } from "@agentmesh/contracts";
import { COULD_NOT_ANSWER } from "./critic-chain-messages.js";
import {
  CORPUS_QUESTION,
  bbHarness,
  bbOut,
  drive,
  goodAgents,
  keyOf,
  type BbHarness,
  type Script,
} from "./blackboard-testkit.js";
import { eventsOf, failure, inputs, tasksOf } from "./testing.js";

const keys = (h: BbHarness) => h.state.meta.awaiting.map(keyOf);
const sentKeys = (h: BbHarness) =>
  [...h.sent.values()].map(
    (t) => `${t.role}.${t.op}${t.op === "execute" ? `:${(t.input as { strategy: string }).strategy}` : ""}`,
  );

/** Start through the plan, answering intake and memory well. */
function planned(h: BbHarness, plan: unknown = bbOut.plan()) {
  h.start();
  h.answer("perception.perceive", bbOut.perception());
  h.answer("executor.list_tools", bbOut.tools());
  h.answer("memory.update", bbOut.memory());
  return h.answer("decision.plan", plan);
}

/** Runs the current step once: tool result, perception, critic report, memory. */
function runStep(h: BbHarness, report = bbOut.report(true), output = "8") {
  const tool = (h.input(h.task("executor.execute:tool")).step as { tool: string }).tool;
  h.answer("executor.execute:tool", bbOut.ok("tool", tool, output));
  h.answer("perception.perceive", bbOut.perception());
  h.answer("critic.report", report);
  return h.answer("memory.update", bbOut.memory());
}

describe("happy path: an arithmetic question (CONSERVATIVE)", () => {
  it("perceives, remembers, plans without retrieval, runs calculator then summarize, and answers", () => {
    const h = bbHarness();
    const start = h.start();
    expect(tasksOf(start).map((t) => `${t.role}.${t.op}`)).toEqual(["perception.perceive", "executor.list_tools"]);
    expect(h.input(h.task("perception.perceive"))).toEqual({ kind: "query", query: "What is 2 + 2 * 3?" });
    expect(h.input(h.task("executor.list_tools"))).toEqual({ max_tools: 16 });

    expect(tasksOf(h.answer("perception.perceive", bbOut.perception()))).toEqual([]);
    h.answer("executor.list_tools", bbOut.tools());
    expect(h.input(h.task("memory.update")).event).toEqual({ kind: "perception", snapshot: bbOut.perception() });
    h.answer("memory.update", bbOut.memory("q"));
    // Arithmetic needs no retrieval: straight to the decision agent.
    const plan = h.input(h.task("decision.plan"));
    expect(plan).toMatchObject({
      retrieval: null,
      memory: bbOut.memory("q"),
      tools: bbOut.tools().tools,
      max_steps: 5,
      strategy_profile: "CONSERVATIVE",
      previous_plan: null,
      failed_step_index: null,
      rewrite_suggestion: null,
    });

    h.answer("decision.plan", bbOut.plan());
    expect(h.input(h.task("executor.execute:tool"))).toMatchObject({
      step_index: 0,
      step: { tool: "calculator", args: [{ name: "expression", value: "2 + 2 * 3" }] },
      strategy: "tool",
      query: null,
      limits: { max_attempts: 3, timeout_ms: 5000 },
      context: null,
    });
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    expect(h.input(h.task("perception.perceive"))).toMatchObject({
      kind: "step_result",
      step_index: 0,
      result: { ok: true, output: "8" },
    });
    h.answer("perception.perceive", bbOut.perception("arithmetic", { goal_satisfied: true }));
    expect(h.input(h.task("critic.report"))).toMatchObject({
      step_index: 0,
      is_final_step: false,
      perception: { goal_satisfied: true },
      retrieval: null,
    });
    h.answer("critic.report", bbOut.report(true));
    expect(h.input(h.task("memory.update")).event).toMatchObject({
      kind: "step",
      step_index: 0,
      result: { output: "8" },
      critic: { is_acceptable: true },
    });
    h.answer("memory.update", bbOut.memory("s1"));

    const summarize = h.input(h.task("executor.execute:tool"));
    expect(summarize).toMatchObject({
      step_index: 1,
      step: { tool: "summarize" },
      context: { results: [{ step_index: 0, tool: "calculator", output: "8" }], retrieval: null, user_replies: [] },
    });
    h.answer("executor.execute:tool", bbOut.ok("tool", "summarize", "2 + 2 * 3 = 8"));
    h.answer("perception.perceive", bbOut.perception());
    expect(h.input(h.task("critic.report"))).toMatchObject({ step_index: 1, is_final_step: true });
    h.answer("critic.report", bbOut.report(true));
    const done = h.answer("memory.update", bbOut.memory("s2"));

    expect(h.state.meta).toMatchObject({ status: "completed", awaiting: [], usage: { steps: 12 } });
    expect(h.state.data).toMatchObject({
      phase: "done",
      final_answer: "2 + 2 * 3 = 8",
      citations: [],
      plan_versions: [{ version: 1, status: "completed", current_index: 1 }],
    });
    expect(eventsOf(done).at(-1)).toMatchObject({
      type: "complete",
      status: "completed",
      final_answer: "2 + 2 * 3 = 8",
    });
    const trace = h.state.data.final_reasoning_trace ?? "";
    for (const line of [
      "Strategy CONSERVATIVE",
      "intent arithmetic",
      "Retrieval skipped",
      "Plan v1",
      "Step 1 (calculator) run 1: tool ok",
      "Critic on step 2: acceptable",
    ])
      expect(trace).toContain(line);
    expect(h.state.data.memory).toEqual(bbOut.memory("s2"));
  });
});

describe("happy path: a corpus question", () => {
  const corpusAgents: Script = (task, input, data) => {
    switch (keyOf(task)) {
      case "perception.perceive":
        return { output: bbOut.perception("lookup") };
      case "decision.plan":
        return { output: bbOut.plan(["corpus_search"]) };
      case "executor.execute:tool":
        return (input.step as { tool: string }).tool === "summarize"
          ? {
              output: bbOut.ok("tool", "summarize", "Every session has a wall-clock deadline [1].", {
                citations: [{ path: "docs/design.md", passage: "Each session has a wall-clock deadline" }],
              }),
            }
          : {
              output: bbOut.ok("tool", "corpus_search", "docs/design.md: Each session has a wall-clock deadline", {
                citations: [{ path: "docs/a.md", passage: "deadlines are durable" }],
              }),
            };
      default:
        return goodAgents(task, input, data);
    }
  };

  it("retrieves with the question, plans from the bundle, and answers with numbered sources", () => {
    const h = bbHarness({ query: CORPUS_QUESTION });
    h.start();
    drive(h, (task, input, data) => {
      if (keyOf(task) === "retriever.retrieve")
        expect(input).toMatchObject({ query: CORPUS_QUESTION, strategies: ["memory", "corpus"], max_items: 20 });
      if (keyOf(task) === "decision.plan") expect(input.retrieval).toEqual(bbOut.retrieval());
      return corpusAgents(task, input, data);
    });
    expect(sentKeys(h)).toContain("retriever.retrieve");
    expect(h.state.meta.status).toBe("completed");
    expect(h.state.data.retrieval_bundles).toEqual([
      { query: CORPUS_QUESTION, strategies: ["memory", "corpus"], bundle: bbOut.retrieval() },
    ]);
    expect(h.state.data.citations).toEqual([
      { path: "docs/a.md", passage: "deadlines are durable" },
      { path: "docs/design.md", passage: "Each session has a wall-clock deadline" },
    ]);
    expect(h.state.data.final_answer).toBe(
      'Every session has a wall-clock deadline [1].\n\nSources:\n[1] docs/a.md: "deadlines are durable"\n[2] docs/design.md: "Each session has a wall-clock deadline"',
    );
  });

  it("derives a retriever query of at most 500 characters from a long question", () => {
    const long = `${"Explain the session deadline rules in detail ".repeat(110)}please.`;
    expect(long.length).toBeGreaterThan(BLACKBOARD_LIMITS.queryMaxChars - 100);
    const h = bbHarness({ query: long.slice(0, 5000) });
    h.start();
    h.answer("perception.perceive", bbOut.perception("explanation"));
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    const q = h.input(h.task("retriever.retrieve")).query as string;
    expect(q.length).toBeLessThanOrEqual(500);
    expect(q.length).toBeGreaterThan(450);
    expect(long.startsWith(q)).toBe(true);
    expect(q.endsWith(" ")).toBe(false);
  });

  it("searches the web too when the profile is not conservative", () => {
    const h = bbHarness({ query: CORPUS_QUESTION, profile: "FALLBACK" });
    h.start();
    h.answer("perception.perceive", bbOut.perception("lookup"));
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    expect(h.input(h.task("retriever.retrieve")).strategies).toEqual(["memory", "corpus", "web"]);
  });
});

describe("retries and rewrites up to their limits", () => {
  it("CONSERVATIVE: retries a rejected step twice, rewrites once, retries twice again, then ends with a clear message", () => {
    const h = bbHarness();
    planned(h);
    const rejected = bbOut.report(false, { issues: ["wrong value"] });
    const attempts: number[] = [];
    for (let run = 0; run < 3; run++) {
      attempts.push(h.task("executor.execute:tool").attempt);
      runStep(h, rejected);
    }
    expect(attempts).toEqual([0, 1, 2]);
    expect(keys(h)).toEqual(["decision.plan"]);
    expect(h.input(h.task("decision.plan"))).toMatchObject({
      previous_plan: bbOut.plan(),
      failed_step_index: 0,
      rewrite_suggestion: expect.stringContaining(
        "Step 1 (calculator) was not acceptable (quality 0.2, hallucination risk 0.1): wrong value",
      ),
    });
    h.answer("decision.plan", bbOut.plan());
    expect(h.state.data).toMatchObject({ rewrite_count: 1, step_retries: 0 });
    expect(h.state.data.plan_versions.map((p) => [p.version, p.status, p.reason])).toEqual([
      [1, "superseded", "initial"],
      [2, "active", "rewrite"],
    ]);
    for (let run = 0; run < 2; run++) runStep(h, rejected);
    const last = runStep(h, rejected);
    expect(tasksOf(last)).toEqual([]);
    expect(h.state.meta).toMatchObject({ status: "completed", awaiting: [] });
    expect(h.state.data.final_answer).toBe(
      `${COULD_NOT_ANSWER} Step 1 (calculator) was not acceptable (quality 0.2, hallucination risk 0.1): wrong value (2 of 2 retries of this step and 1 of 1 plan rewrites used).`,
    );
    expect(h.state.data.plan_versions.map((p) => p.status)).toEqual(["superseded", "abandoned"]);
    expect(h.state.data.critic_reports).toHaveLength(6);
    expect(eventsOf(last).at(-1)).toMatchObject({
      type: "complete",
      status: "completed",
      final_answer: h.state.data.final_answer,
    });
  });

  it("prefers a rewrite when the critic suggests one", () => {
    const h = bbHarness({ profile: "EXPLORATORY" });
    planned(h);
    for (const s of ["tool", "rag", "web"] as const)
      h.answer(
        `executor.execute:${s}`,
        bbOut.ok(s, s === "tool" ? "calculator" : s === "rag" ? "corpus_search" : "web_search", "8"),
      );
    h.answer("perception.perceive", bbOut.perception());
    h.answer("critic.report", bbOut.report(false, { rewrite_suggestion: "Use run_python for exact fractions" }));
    expect(h.state.data.next_action).toEqual({ kind: "rewrite", suggestion: "Use run_python for exact fractions" });
    h.answer("memory.update", bbOut.memory());
    expect(h.input(h.task("decision.plan")).rewrite_suggestion).toBe("Use run_python for exact fractions");
  });

  it("rewrites at once after a failure no retry can fix, and gives up when no rewrite is left", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.fail("tool", "calculator", "invalid_tool_input", false));
    h.answer("memory.update", bbOut.memory());
    expect(keys(h)).toEqual(["decision.plan"]);
    h.answer("decision.plan", bbOut.plan(["run_python"]));
    h.answer("executor.execute:tool", bbOut.fail("tool", "run_python", "sandbox_unavailable", false));
    h.answer("memory.update", bbOut.memory());
    expect(h.state.meta.status).toBe("completed");
    expect(h.state.data.final_answer).toContain(
      `${COULD_NOT_ANSWER} Step 1 (run_python) failed: tool run_python: sandbox_unavailable`,
    );
    expect(h.state.data.step_retries).toBe(0);
  });

  it("cuts a plan longer than the profile allows, keeping its summarize step", () => {
    const h = bbHarness();
    const long = bbOut.plan([
      "calculator",
      "calculator",
      "calculator",
      "calculator",
      "calculator",
      "calculator",
      "calculator",
    ]);
    const o = planned(h, long);
    expect(h.state.data.plan_versions[0]?.steps.map((s) => s.tool)).toEqual([
      "calculator",
      "calculator",
      "calculator",
      "calculator",
      "summarize",
    ]);
    expect(eventsOf(o)).toContainEqual(
      expect.objectContaining({
        name: "decision",
        status: "completed",
        description: expect.stringContaining("cut from 8 to 5 steps"),
      }),
    );
  });

  it("walks a multi-step plan in order, each step's accepted result kept for the summary", () => {
    const h = bbHarness({ profile: "FALLBACK" });
    planned(h, bbOut.plan(["calculator", "corpus_search"]));
    runStep(h, bbOut.report(true), "8");
    expect(h.input(h.task("executor.execute:tool"))).toMatchObject({ step_index: 1, step: { tool: "corpus_search" } });
    runStep(h, bbOut.report(true), "a passage");
    expect(h.input(h.task("executor.execute:tool")).context).toMatchObject({
      results: [
        { step_index: 0, output: "8" },
        { step_index: 1, output: "a passage" },
      ],
    });
  });
});

describe("typed agent failures", () => {
  const err = (code: WireError["code"], retryable: boolean) => failure(code, retryable, `${code} from the agent`);

  it("re-dispatches a retryable agent failure up to 3 attempts, then ends with a clear message", () => {
    const h = bbHarness();
    h.start();
    h.answer("executor.list_tools", bbOut.tools());
    expect(tasksOf(h.failTask("perception.perceive", err("model_error", true))).map((t) => t.attempt)).toEqual([1]);
    h.deadline("perception.perceive");
    expect(h.task("perception.perceive").attempt).toBe(2);
    const end = h.failTask("perception.perceive", err("model_rate_limited", true));
    expect(h.state.meta).toMatchObject({
      status: "failed",
      awaiting: [],
      error: { code: "model_rate_limited", component: "perception" },
    });
    expect(h.state.data.final_answer).toBe(
      `${COULD_NOT_ANSWER} The question could not be analysed by the perception agent (model_rate_limited: model_rate_limited from the agent)`,
    );
    expect(eventsOf(end).map((e) => e.type)).toEqual(["stage", "error", "complete"]);
  });

  it("plans without a tool list when the executor cannot list its tools", () => {
    const h = bbHarness();
    h.start();
    h.failTask("executor.list_tools", err("unavailable", false));
    h.answer("perception.perceive", bbOut.perception());
    h.answer("memory.update", bbOut.memory());
    expect(h.input(h.task("decision.plan")).tools).toEqual([]);
  });

  it("keeps the memory as it was when the memory agent fails, and goes on", () => {
    const h = bbHarness();
    h.start();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.failTask("memory.update", err("needs_model", false));
    expect(h.input(h.task("decision.plan")).memory).toEqual({
      short_term: [],
      banned_tools: [],
      successful_tools: [],
      patterns: [],
      long_term_refs: [],
    });
  });

  it("plans without retrieval when the retriever fails", () => {
    const h = bbHarness({ query: CORPUS_QUESTION });
    h.start();
    h.answer("perception.perceive", bbOut.perception("lookup"));
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    h.failTask("retriever.retrieve", err("tool_unavailable", false));
    expect(h.input(h.task("decision.plan")).retrieval).toBeNull();
    expect(h.state.data.trace.at(-1)).toContain("Retrieval failed (tool_unavailable");
  });

  it("lets the critic judge a result without perception when perception of it fails", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    h.failTask("perception.perceive", err("model_refused", false));
    expect(h.input(h.task("critic.report"))).toMatchObject({ perception: null, result: { output: "8" } });
  });

  it("ends with a clear message when the decision agent cannot plan", () => {
    const h = bbHarness();
    h.start();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    h.failTask("decision.plan", err("model_refused", false));
    expect(h.state.meta).toMatchObject({ status: "failed", error: { code: "model_refused", component: "decision" } });
    expect(h.state.data.final_answer).toContain("No plan could be made (model_refused");
  });

  it("gives no answer unreviewed when the critic fails", () => {
    const h = bbHarness();
    planned(h);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    h.answer("perception.perceive", bbOut.perception());
    h.failTask("critic.report", err("needs_model", false));
    expect(h.state.meta).toMatchObject({ status: "failed", error: { code: "needs_model", component: "critic" } });
    expect(h.state.data.final_answer).toContain("no answer is given unreviewed");
  });

  it("turns an agent output that breaks a heuristic limit into a retryable validation failure", () => {
    const h = bbHarness();
    h.start();
    h.answer("executor.list_tools", bbOut.tools());
    const o = h.answer("perception.perceive", { ...bbOut.perception(), confidence: 1.7 });
    expect(tasksOf(o).map((t) => [t.op, t.attempt])).toEqual([["perceive", 1]]);
    expect(eventsOf(o)).toContainEqual(
      expect.objectContaining({
        type: "stage",
        name: "perception",
        status: "failed",
        description: expect.stringContaining("invalid_message"),
      }),
    );
  });
});

describe("runtime endings", () => {
  it("writes clear final fields when cancelled mid-round", () => {
    const h = bbHarness({ profile: "EXPLORATORY" });
    planned(h);
    const o = h.apply(inputs.cancel("user asked"));
    expect(h.state.meta).toMatchObject({ status: "cancelled", awaiting: [] });
    expect(h.state.data).toMatchObject({
      phase: "done",
      final_answer: `${COULD_NOT_ANSWER} The session ended early (cancelled): user asked`,
      error_component: "execute",
    });
    expect(o.clearTimers).toHaveLength(4);
    expect(h.state.data.plan_versions[0]?.status).toBe("abandoned");
  });

  it("completes on every profile with well-behaved agents", () => {
    for (const profile of ["CONSERVATIVE", "EXPLORATORY", "FALLBACK"] as const) {
      const h = bbHarness({ profile });
      h.start();
      drive(h, goodAgents);
      expect(h.state.meta.status).toBe("completed");
      expect(h.state.data.final_answer).toBe("2 + 2 * 3 = 8");
    }
  });
});
