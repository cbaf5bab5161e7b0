import { describe, expect, it } from "vitest";
import { LIMITS, OPS, type CriticChainData } from "@agentmesh/contracts";
import { criticChain } from "./critic-chain.js";
import { COULD_NOT_ANSWER, orchestratorMessage } from "./critic-chain-messages.js";
import { QUESTION, eventsOf, failure, harness, inputs, mintedId, onlyTask, out, tasksOf } from "./testing.js";

type H = ReturnType<typeof harness>;
const data = (h: H) => h.state.data;

/** Start, plan, approve the plan: the session is at its first research step (or the expert). */
function toResearch(h: H, steps: string[], expert = ["Define it", "Name the inventors"]) {
  h.apply(inputs.start());
  h.reply(out.plan(steps, expert));
  return h.reply(out.approve());
}

describe("critic-chain init", () => {
  it("starts from the initial state, with the retry limit from options or 5", () => {
    const d = criticChain.init(QUESTION, {});
    expect(d).toMatchObject({
      question: QUESTION,
      current_step: "input",
      next_step: "planner",
      retry_count: 0,
      retry_limit: 5,
    });
    expect(d).toMatchObject({
      current_research_index: -1,
      research_steps: [],
      expert_steps: [],
      research_results: [],
      expert_answer: "",
    });
    expect(d).toMatchObject({
      final_answer: null,
      final_reasoning_trace: null,
      error: null,
      error_component: null,
      critic_planner_decision: null,
    });
    expect(criticChain.init(QUESTION, { retry_limit: 2 }).retry_limit).toBe(2);
  });
});

describe("critic-chain happy path with three research steps", () => {
  it("walks planner, critic, research 0..2, expert, critic, finalizer with the chain's messages", () => {
    const h = harness();
    const start = h.apply(inputs.start());
    const planner = onlyTask(start);
    expect([planner.role, planner.op]).toEqual(["planner", "plan"]);
    expect(planner.input.message).toEqual({
      sender: "orchestrator",
      receiver: "planner",
      type: "instruction",
      content: `Develop a logical plan to answer: ${QUESTION}`,
      step_id: null,
    });
    expect(planner.input.feedback).toBeNull();
    expect(data(h)).toMatchObject({ current_step: "planner", next_step: "planner" });

    const review = onlyTask(h.reply(out.plan(["r1", "r2", "r3"], ["e1", "e2"])));
    expect([review.role, review.op]).toEqual(["critic", "review_plan"]);
    expect(review.input.message).toMatchObject({
      receiver: "critic_planner",
      content: "Review plan: r1\nr2\nr3\ne1\ne2",
      step_id: null,
    });
    expect(data(h)).toMatchObject({
      current_step: "critic_planner",
      research_steps: ["r1", "r2", "r3"],
      expert_steps: ["e1", "e2"],
    });

    let o = h.reply(out.approve());
    for (const i of [0, 1, 2]) {
      const research = onlyTask(o);
      expect([research.role, research.op]).toEqual(["researcher", "research"]);
      expect(research.input.message).toMatchObject({
        receiver: "researcher",
        content: `Research: r${i + 1}`,
        step_id: i,
      });
      expect(research.input).toMatchObject({ research_step: `r${i + 1}`, feedback: null });
      expect(data(h)).toMatchObject({ current_step: "researcher", current_research_index: i });

      const critic = onlyTask(h.reply(out.research(`result ${i}`)));
      expect([critic.role, critic.op]).toEqual(["critic", "review_research"]);
      expect(critic.input.message).toMatchObject({
        receiver: "critic_researcher",
        content: `Review research: result ${i}`,
        step_id: i,
      });
      expect(critic.input).toMatchObject({ research_step: `r${i + 1}`, research_result: `result ${i}` });
      o = h.reply(out.approve());
    }
    expect(data(h).research_results).toEqual(["result 0", "result 1", "result 2"]);

    const expert = onlyTask(o);
    expect([expert.role, expert.op]).toEqual(["expert", "answer"]);
    expect(expert.input.message).toMatchObject({ receiver: "expert", content: "Perform steps: e1 e2", step_id: null });
    expect(expert.input).toMatchObject({ research_results: ["result 0", "result 1", "result 2"], feedback: null });

    const criticE = onlyTask(h.reply(out.answer("Gene editing; Doudna and Charpentier", "r")));
    expect(criticE.input.message).toMatchObject({
      receiver: "critic_expert",
      content: "Review expert answer: Gene editing; Doudna and Charpentier",
    });
    expect(criticE.input).toMatchObject({
      expert_answer: "Gene editing; Doudna and Charpentier",
      expert_reasoning: "r",
    });

    const fin = onlyTask(h.reply(out.approve()));
    expect([fin.role, fin.op]).toEqual(["finalizer", "finalize"]);
    expect(fin.input.message).toMatchObject({
      receiver: "finalizer",
      content: "Generate final answer and reasoning trace",
      step_id: null,
    });
    expect(fin.input).toMatchObject({
      error: null,
      error_component: null,
      expert_answer: "Gene editing; Doudna and Charpentier",
    });

    const done = h.reply(out.finalize("CRISPR is gene editing", "researched then answered"));
    expect(tasksOf(done)).toEqual([]);
    expect(h.state.meta.status).toBe("completed");
    expect(data(h)).toMatchObject({
      current_step: "finalizer",
      next_step: "finalizer",
      final_answer: "CRISPR is gene editing",
      retry_count: 0,
    });
    expect(eventsOf(done).at(-1)).toMatchObject({
      type: "complete",
      status: "completed",
      final_answer: "CRISPR is gene editing",
      final_reasoning_trace: "researched then answered",
    });
  });

  it("emits stage events: completed for the applied step (critics with their decision), running for the dispatched one", () => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan(["r1"], ["e1"]));
    const stages = eventsOf(h.reply(out.reject("too vague"))).filter((e) => e.type === "stage");
    expect(stages).toEqual([
      expect.objectContaining({
        name: "critic_planner",
        status: "completed",
        description: "reject: too vague (retries 1/5)",
      }),
      expect.objectContaining({ name: "planner", status: "running", description: "too vague" }),
    ]);
  });
});

describe("critic-chain decision logic", () => {
  it("goes straight to the expert when the plan has no research steps", () => {
    const h = harness();
    const expert = onlyTask(toResearch(h, [], ["compute 2+2"]));
    expect([expert.role, expert.op]).toEqual(["expert", "answer"]);
    expect(expert.input.message).toMatchObject({ content: "Perform steps: compute 2+2" });
    expect(data(h)).toMatchObject({ current_step: "expert", current_research_index: -1, research_results: [] });
  });

  it("re-plans with the critic's feedback on a reject, and completes via the finalizer after 4 rejects and an approve", () => {
    const h = harness();
    h.apply(inputs.start());
    for (let n = 1; n <= 4; n++) {
      h.reply(out.plan([], ["e"]));
      const planner = onlyTask(h.reply(out.reject(`fix ${n}`)));
      expect([planner.role, planner.input.message.content, planner.input.feedback]).toEqual([
        "planner",
        `fix ${n}`,
        `fix ${n}`,
      ]);
      expect(planner.input.message.step_id).toBeNull();
      expect(data(h)).toMatchObject({
        retry_count: n,
        critic_planner_decision: "reject",
        critic_planner_feedback: `fix ${n}`,
        current_step: "planner",
      });
    }
    h.reply(out.plan([], ["e"]));
    h.reply(out.approve());
    h.reply(out.answer("4"));
    expect(onlyTask(h.reply(out.approve())).role).toBe("finalizer");
    h.reply(out.finalize("four"));
    expect(h.state.meta.status).toBe("completed");
    expect(data(h)).toMatchObject({ retry_count: 4, final_answer: "four" });
  });

  it("ends at the 5th reject without a finalizer task, both final fields verbatim", () => {
    const h = harness();
    h.apply(inputs.start());
    let last = h.reply(out.plan([], ["e"]));
    for (let n = 1; n <= 5; n++) {
      last = h.reply(out.reject(`no ${n}`));
      if (n < 5) h.reply(out.plan([], ["e"]));
    }
    expect(tasksOf(last)).toEqual([]);
    expect(h.state.meta.status).toBe("completed");
    expect(h.state.meta.awaiting).toEqual([]);
    expect(data(h)).toMatchObject({
      retry_count: 5,
      current_step: "finalizer",
      next_step: "finalizer",
      final_answer: COULD_NOT_ANSWER,
      final_reasoning_trace: COULD_NOT_ANSWER,
    });
    expect(COULD_NOT_ANSWER).toBe("The question could not be answered.");
    expect(eventsOf(last).at(-1)).toMatchObject({
      type: "complete",
      status: "completed",
      final_answer: COULD_NOT_ANSWER,
      final_reasoning_trace: COULD_NOT_ANSWER,
    });
  });

  it("counts rejects from all three critics against one per-session limit", () => {
    const h = harness({ options: { retry_limit: 3 } });
    toResearch(h, ["r1"]);
    h.reply(out.research("weak"));
    const redo = onlyTask(h.reply(out.reject("cite a source")));
    expect(redo.role).toBe("researcher");
    expect(data(h).retry_count).toBe(1);
    h.reply(out.research("strong"));
    h.reply(out.approve());
    h.reply(out.answer("A1"));
    const expertRedo = onlyTask(h.reply(out.reject("show the reasoning")));
    expect(expertRedo.input.message).toMatchObject({
      receiver: "expert",
      content: "show the reasoning",
      step_id: null,
    });
    expect(expertRedo.input.feedback).toBe("show the reasoning");
    expect(data(h)).toMatchObject({ retry_count: 2, critic_expert_decision: "reject", current_step: "expert" });
    h.reply(out.answer("A2"));
    const end = h.reply(out.reject("still wrong"));
    expect(tasksOf(end)).toEqual([]);
    expect(data(h)).toMatchObject({ retry_count: 3, final_answer: COULD_NOT_ANSWER, expert_answer: "A2" });
    expect(h.state.meta.status).toBe("completed");
  });

  it("re-researches a rejected step with the feedback and the same step_id, replacing its result", () => {
    const h = harness();
    toResearch(h, ["r1", "r2"]);
    h.reply(out.research("first try"));
    const redo = onlyTask(h.reply(out.reject("too shallow")));
    expect(redo.input.message).toMatchObject({ receiver: "researcher", content: "too shallow", step_id: 0 });
    expect(redo.input).toMatchObject({ research_step: "r1", feedback: "too shallow" });
    expect(data(h)).toMatchObject({ current_research_index: 0, research_results: ["first try"] });
    const critic = onlyTask(h.reply(out.research("second try")));
    expect(critic.input).toMatchObject({ research_result: "second try" });
    expect(data(h).research_results).toEqual(["second try"]);
    const next = onlyTask(h.reply(out.approve()));
    expect(next.input.message).toMatchObject({ content: "Research: r2", step_id: 1 });
    h.reply(out.research("r2 result"));
    expect(onlyTask(h.reply(out.approve())).role).toBe("expert");
    expect(data(h).research_results).toEqual(["second try", "r2 result"]);
  });
});

describe("critic-chain agent failures", () => {
  it("counts a retryable failure as a retry and re-dispatches the same message as attempt + 1", () => {
    const h = harness();
    toResearch(h, ["r1", "r2"]);
    const first = h.awaited();
    const o = h.fail(failure("model_rate_limited", true));
    const again = onlyTask(o);
    expect(again.attempt).toBe(1);
    expect(again.task_id).toMatch(mintedId("", h.state.meta.version, 0, 1));
    expect(again.input.message).toEqual({
      sender: "orchestrator",
      receiver: "researcher",
      type: "instruction",
      content: "Research: r1",
      step_id: 0,
    });
    expect(data(h)).toMatchObject({ retry_count: 1, current_research_index: 0, current_step: "researcher" });
    expect(first.attempt).toBe(0);
    const stage = eventsOf(o).find((e) => e.type === "stage" && e.status === "failed");
    expect(stage).toMatchObject({ name: "researcher", description: expect.stringContaining("model_rate_limited") });
  });

  it("ends with the verbatim final fields when retryable failures reach the limit", () => {
    const h = harness({ options: { retry_limit: 2 } });
    h.apply(inputs.start());
    h.fail(failure("model_error", true));
    const end = h.fail(failure("model_error", true));
    expect(tasksOf(end)).toEqual([]);
    expect(h.state.meta.status).toBe("completed");
    expect(data(h)).toMatchObject({
      retry_count: 2,
      final_answer: COULD_NOT_ANSWER,
      final_reasoning_trace: COULD_NOT_ANSWER,
    });
  });

  it("sends a non-retryable failure to the finalizer with error and error_component", () => {
    const h = harness();
    toResearch(h, []);
    const o = h.fail(failure("model_refused", false, "401 from the endpoint"));
    const fin = onlyTask(o);
    expect([fin.role, fin.op, fin.attempt]).toEqual(["finalizer", "finalize", 0]);
    expect(fin.input).toMatchObject({ error: "401 from the endpoint", error_component: "expert" });
    expect(data(h)).toMatchObject({
      error: "401 from the endpoint",
      error_component: "expert",
      current_step: "finalizer",
      retry_count: 0,
    });
    expect(eventsOf(o)).toContainEqual(
      expect.objectContaining({ type: "error", code: "model_refused", component: "expert" }),
    );
    h.reply(out.finalize("Sorry: the expert could not run.", "expert failed"));
    expect(h.state.meta.status).toBe("completed");
    expect(data(h).final_answer).toBe("Sorry: the expert could not run.");
  });

  it("names the critic step as error_component when a critic fails", () => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan([], ["e"]));
    h.fail(failure("needs_model", false));
    expect(data(h).error_component).toBe("critic_planner");
  });

  it("fails the session when the finalizer fails for good", () => {
    const h = harness();
    toResearch(h, []);
    h.reply(out.answer("A"));
    h.reply(out.approve());
    const o = h.fail(failure("model_refused", false, "bad key"));
    expect(tasksOf(o)).toEqual([]);
    expect(h.state.meta.status).toBe("failed");
    expect(h.state.meta.error).toMatchObject({ code: "model_refused", message: "bad key", component: "finalizer" });
    expect(data(h)).toMatchObject({
      final_answer: COULD_NOT_ANSWER,
      final_reasoning_trace: COULD_NOT_ANSWER,
      error: "bad key",
      error_component: "finalizer",
    });
    expect(eventsOf(o).map((e) => e.type)).toEqual(["stage", "error", "complete"]);
    expect(eventsOf(o).at(-1)).toMatchObject({ status: "failed", final_answer: COULD_NOT_ANSWER });
  });

  it("retries a finalizer that fails retryably", () => {
    const h = harness();
    toResearch(h, []);
    h.reply(out.answer("A"));
    h.reply(out.approve());
    const again = onlyTask(h.fail(failure("timeout", true)));
    expect([again.role, again.attempt]).toEqual(["finalizer", 1]);
    expect(data(h).retry_count).toBe(1);
  });
});

describe("critic-chain messages and guards", () => {
  const base = (over: Partial<CriticChainData>): CriticChainData => ({ ...criticChain.init(QUESTION, {}), ...over });

  it("says 'All research steps completed.' when the index runs past the plan", () => {
    const built = orchestratorMessage(base({ research_steps: ["r1"], current_research_index: 0 }), "researcher", true);
    expect(built.message).toMatchObject({ content: "All research steps completed.", step_id: 0 });
    expect(built.data.current_research_index).toBe(1);
  });

  it("reviews an empty research result when the index has no result yet", () => {
    const built = orchestratorMessage(
      base({ research_steps: ["r1"], current_research_index: 0 }),
      "critic_researcher",
      false,
    );
    expect(built.message).toMatchObject({ content: "Review research: ", step_id: 0 });
  });

  it("clips an orchestrator message to the contracts' text limit and still sends a valid task", () => {
    const long = "x".repeat(1900);
    const h = harness();
    h.apply(inputs.start());
    const review = onlyTask(
      h.reply(
        out.plan(
          Array.from({ length: 12 }, () => long),
          [long],
        ),
      ),
    );
    expect(review.input.message.content.length).toBe(LIMITS.maxTextChars);
    expect((review.input.research_steps as string[]).length).toBe(12);
  });

  it("resets the research index and results when the plan is approved", () => {
    const stale = base({
      current_step: "critic_planner",
      next_step: "critic_planner",
      research_steps: ["r1", "r2"],
      current_research_index: 1,
      research_results: ["old"],
    });
    const decided = criticChain.decide(stale, {
      kind: "result",
      role: "critic",
      op: "review_plan",
      attempt: 0,
      output: OPS.critic.review_plan.response.parse(out.approve()),
    });
    expect(decided.data).toMatchObject({ current_step: "researcher", current_research_index: 0, research_results: [] });
    expect(decided.control).toMatchObject({
      kind: "dispatch",
      tasks: [{ input: { message: { content: "Research: r1", step_id: 0 } } }],
    });
  });

  it("fails as internal on inputs the runtime never passes on", () => {
    const d = criticChain.init(QUESTION, {});
    expect(criticChain.decide(d, { kind: "user_reply", text: "hi" }).control).toMatchObject({
      kind: "fail",
      error: { code: "internal" },
    });
    const planning = { ...d, current_step: "planner" as const, next_step: "planner" as const };
    const wrong = criticChain.decide(planning, {
      kind: "result",
      role: "expert",
      op: "answer",
      attempt: 0,
      output: OPS.expert.answer.response.parse(out.answer("a")),
    });
    expect(wrong.control).toMatchObject({ kind: "fail", error: { code: "internal" } });
    expect(criticChain.decide(planning, { kind: "start" }).control.kind).toBe("fail");
  });

  it("writes the verbatim final fields and the error when the runtime aborts it", () => {
    const aborted = criticChain.abort(base({ current_step: "expert" }), {
      code: "cancelled",
      message: "stop",
      retryable: false,
      component: null,
    });
    expect(aborted).toMatchObject({ final_answer: COULD_NOT_ANSWER, final_reasoning_trace: COULD_NOT_ANSWER });
    expect(aborted.data).toMatchObject({ final_answer: COULD_NOT_ANSWER, error: "stop", error_component: "expert" });
  });
});
