import { describe, expect, it } from "vitest";
import {
  LIMITS,
  inputIds,
  madeByTag,
  parseTaskId,
  taskId,
  type Budgets,
  type SessionState,
} from "@agentmesh/contracts";
import { createSession, effectiveBudgets, replay, step } from "./runtime.js";
import { getWorkflow, WORKFLOWS } from "./registry.js";
import { COULD_NOT_ANSWER } from "./critic-chain-messages.js";
import {
  DEFAULTS,
  QUESTION,
  SID,
  mintedId,
  T0,
  UNLIMITED,
  eventsOf,
  failure,
  failureFor,
  harness,
  inputs,
  onlyTask,
  out,
  resultFor,
  tasksOf,
} from "./testing.js";

type H = ReturnType<typeof harness>;

/** Makes mutation of the caller's state throw, so a test proves step() leaves it alone. */
function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object") {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

/** Runs the session to its critic_planner step and returns the planner task it answered. */
function planned(h: H, steps: string[] = ["r1"]) {
  h.apply(inputs.start());
  const planner = h.awaited();
  h.reply(out.plan(steps, ["e1"]));
  return planner;
}

describe("createSession", () => {
  it("starts at version 0, running, awaiting nothing, with zero usage and the workflow's data", () => {
    const s = createSession({
      sessionId: SID,
      workflow: "critic-chain",
      query: QUESTION,
      options: {},
      now: T0,
      defaults: DEFAULTS,
    });
    expect(s.meta).toEqual({
      session_id: SID,
      version: 0,
      workflow: "critic-chain",
      workflow_version: 1,
      status: "running",
      awaiting: [],
      usage: { steps: 0, model_calls: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, tool_calls: 0 },
      budgets: UNLIMITED,
      max_tool_calls: 100,
      created_at: T0,
      updated_at: T0,
      deadline_at: T0 + 3_600_000,
      error: null,
      paused_ms: 0,
      pause: null,
      owner: null,
      thread_id: null,
      trace: null,
    });
    expect(s.data).toEqual(WORKFLOWS["critic-chain"].init(QUESTION, {}));
  });

  it("writes the owner and thread into the metadata", () => {
    const s = createSession({
      sessionId: "sess_test_0002",
      workflow: "critic-chain",
      query: QUESTION,
      options: {},
      now: T0,
      defaults: DEFAULTS,
      owner: "alice",
      threadId: "thread-0001",
    });
    expect(s.meta).toMatchObject({ owner: "alice", thread_id: "thread-0001" });
  });

  it("takes budgets from the defaults, overridden key by key by the options (null lifts a limit when there is no ceiling)", () => {
    const budgets: Budgets = { max_steps: 10, max_tokens: 1000, max_cost_usd: 1, max_wall_ms: 5000 };
    const s = createSession({
      sessionId: SID,
      workflow: "critic-chain",
      query: QUESTION,
      options: { budgets: { max_steps: 3, max_tokens: null } },
      now: T0,
      defaults: { budgets, ceilings: UNLIMITED, taskDeadlineMs: null, sessionDeadlineMs: null, pauseTimeoutMs: null },
    });
    expect(s.meta.budgets).toEqual({ max_steps: 3, max_tokens: null, max_cost_usd: 1, max_wall_ms: 5000 });
    // No session deadline, but the wall-clock budget arms the session timer.
    expect(s.meta.deadline_at).toBe(T0 + 5000);
  });

  it("never lets a request raise a budget above the server's ceiling: explicit null and larger values get the ceiling", () => {
    const ceilings: Budgets = { max_steps: 50, max_tokens: 100_000, max_cost_usd: 2, max_wall_ms: 600_000 };
    const defaults = {
      budgets: { max_steps: 10, max_tokens: null, max_cost_usd: null, max_wall_ms: null },
      ceilings,
      taskDeadlineMs: null,
      sessionDeadlineMs: null,
      pauseTimeoutMs: null,
    };
    const make = (b: Partial<Budgets>) =>
      createSession({
        sessionId: SID,
        workflow: "critic-chain",
        query: QUESTION,
        options: { budgets: b },
        now: T0,
        defaults,
      }).meta;
    // Every limit lifted by the client: each one lands on its ceiling, none is unlimited.
    const lifted = make({ max_steps: null, max_tokens: null, max_cost_usd: null, max_wall_ms: null });
    expect(lifted.budgets).toEqual(ceilings);
    expect(lifted.deadline_at).toBe(T0 + 600_000);
    expect(
      make({ max_steps: 1_000_000, max_tokens: 10 ** 9, max_cost_usd: 1e6, max_wall_ms: 10 ** 9 }).budgets,
    ).toEqual(ceilings);
    // Absent keys: the default, or the ceiling where the default is "no limit".
    expect(make({}).budgets).toEqual({ max_steps: 10, max_tokens: 100_000, max_cost_usd: 2, max_wall_ms: 600_000 });
    // Lower than the ceiling: the client's value stands.
    expect(make({ max_steps: 4, max_cost_usd: 0.5 }).budgets).toMatchObject({ max_steps: 4, max_cost_usd: 0.5 });
    expect(
      effectiveBudgets(
        { max_steps: 60 },
        { budgets: { ...UNLIMITED, max_steps: 70 }, ceilings: { ...UNLIMITED, max_steps: 50 } },
      ).max_steps,
    ).toBe(50);
  });

  it("refuses an unknown workflow; the registry knows critic-chain only", () => {
    expect(() =>
      createSession({ sessionId: SID, workflow: "nope", query: QUESTION, options: {}, now: T0, defaults: DEFAULTS }),
    ).toThrow(/unknown workflow/);
    expect(getWorkflow("critic-chain")).toBe(WORKFLOWS["critic-chain"]);
    expect(getWorkflow("toString")).toBeNull();
  });
});

const minted = (head: string, v: number, i: number, a: number) => expect.stringMatching(mintedId(head, v, i, a));

describe("step: the first transition", () => {
  it("dispatches with a derived task id, deadline, timers, stamped events after the tasks, and counts a step", () => {
    const h = harness();
    const o = h.apply(inputs.start());
    const task = onlyTask(o);
    // the last part is the digest of the input that made the version (here the start)
    expect(task.task_id).toBe(taskId(SID, 1, 0, 0, inputIds.start(SID)));
    expect(parseTaskId(task.task_id)).toEqual({
      sessionId: SID,
      version: 1,
      index: 0,
      attempt: 0,
      made: madeByTag(SID, inputIds.start(SID)),
    });
    expect(task).toMatchObject({
      v: 1,
      session_id: SID,
      role: "planner",
      op: "plan",
      attempt: 0,
      deadline_at: T0 + 60_000,
    });
    expect(h.state.meta).toMatchObject({ version: 1, updated_at: T0, status: "running" });
    expect(h.state.meta.usage.steps).toBe(1);
    expect(h.state.meta.awaiting).toEqual([
      { task_id: task.task_id, role: "planner", op: "plan", attempt: 0, dispatched_at: T0, deadline_at: T0 + 60_000 },
    ]);
    expect(o.outbox.map((e) => e.kind)).toEqual(["task", "event"]);
    expect(eventsOf(o)).toEqual([
      {
        v: 1,
        session_id: SID,
        version: 1,
        index: 0,
        timestamp: T0,
        type: "stage",
        name: "planner",
        status: "running",
        description: expect.any(String),
      },
    ]);
    expect(o.commands).toEqual([`dispatch planner.plan ${task.task_id}`]);
    expect(o.timers).toEqual([
      { member: `task:${task.task_id}`, dueAt: T0 + 60_000 },
      { member: `session:${SID}`, dueAt: T0 + 3_600_000 },
    ]);
    expect(o.clearTimers).toEqual([]);
  });

  it("arms the session timer only once and no task timer without a task deadline", () => {
    const h = harness({ defaults: { ...DEFAULTS, taskDeadlineMs: null } });
    h.apply(inputs.start());
    expect(h.awaited().deadline_at).toBeNull();
    const o = h.reply(out.plan([], ["e"]));
    expect(o.timers).toEqual([]);
    expect(o.clearTimers).toEqual([minted("task:", 1, 0, 0)]);
    expect(onlyTask(o).task_id).toEqual(minted("", 2, 0, 0));
  });

  it("never mutates the state it is given and gives the same outcome twice", () => {
    const h = harness();
    h.apply(inputs.start());
    const frozen = deepFreeze(structuredClone(h.state));
    const input = resultFor(h.awaited(), out.plan(["r"], ["e"]));
    const a = step(frozen, input, { now: T0 + 5, defaults: DEFAULTS });
    expect(step(frozen, input, { now: T0 + 5, defaults: DEFAULTS })).toEqual(a);
    expect(frozen).toEqual(h.state);
  });
});

describe("step: inputs that do not apply", () => {
  it("drops input for another session, and a second start", () => {
    const h = harness();
    expect(h.send(inputs.start("sess_other_0002"))).toMatchObject({ kind: "drop", reason: "wrong_session" });
    h.apply(inputs.start());
    expect(h.send(inputs.start())).toMatchObject({ kind: "drop", reason: "not_applicable" });
    expect(h.state.meta.version).toBe(1);
  });

  it("drops duplicate, late-attempt and unknown results without changing anything", () => {
    const h = harness();
    planned(h);
    const reviewTask = h.awaited();
    const answer = resultFor(reviewTask, out.approve());
    h.apply(answer);
    const before = structuredClone(h.state);
    expect(h.send(answer)).toMatchObject({ kind: "drop", reason: "not_awaited" });
    expect(h.send(resultFor({ ...reviewTask, task_id: `${SID}.99.0.0` }, out.approve()))).toMatchObject({
      kind: "drop",
      reason: "not_awaited",
    });
    // A retry makes the first attempt's late result stale.
    const research0 = h.awaited();
    h.fail(failure("model_error", true));
    expect(h.send(resultFor(research0, out.research("late")))).toMatchObject({ kind: "drop", reason: "not_awaited" });
    expect(h.state.data.research_results).toEqual([]);
    expect(h.state.meta.version).toBe(before.meta.version + 1);
  });

  it("drops a result from a role other than the one the awaited task went to, without consuming the task; the real one applies", () => {
    const h = harness();
    planned(h);
    const reviewTask = h.awaited();
    const before = structuredClone(h.state);
    const forged = resultFor({ ...reviewTask, role: "researcher" }, out.approve());
    expect(h.send(forged)).toMatchObject({ kind: "drop", reason: "wrong_sender" });
    expect(h.state).toEqual(before);
    expect(h.awaited().task_id).toBe(reviewTask.task_id);
    h.apply(resultFor(reviewTask, out.approve()));
    expect(h.state.meta.version).toBe(before.meta.version + 1);
  });

  it("drops a user reply while not awaiting the user, and a task timer naming no task", () => {
    const h = harness();
    h.apply(inputs.start());
    expect(h.send(inputs.userReply("hello"))).toMatchObject({ kind: "drop", reason: "not_applicable" });
    expect(h.send(inputs.taskTimer(null))).toMatchObject({ kind: "drop", reason: "invalid" });
  });
});

describe("step: results", () => {
  it("adds the provenance's usage to the session and emits a step event with it", () => {
    const h = harness();
    h.apply(inputs.start());
    const o = h.reply(out.plan(["r"], ["e"]), {
      prompt_tokens: 100,
      completion_tokens: 20,
      cost_usd: 0.5,
      model_calls: 2,
    });
    expect(h.state.meta.usage).toEqual({
      steps: 2,
      model_calls: 2,
      prompt_tokens: 100,
      completion_tokens: 20,
      cost_usd: 0.5,
      tool_calls: 0,
    });
    const stepEvent = eventsOf(o)[0];
    expect(stepEvent).toMatchObject({
      type: "step",
      task_id: minted("", 1, 0, 0),
      summary: "planner.plan attempt 0: ok",
      provenance: { model: "scripted", usage: { model_calls: 2 } },
    });
  });

  it("turns output that fails the response schema into a retryable invalid_message failure", () => {
    const h = harness();
    h.apply(inputs.start());
    const o = h.reply({ research_steps: "not a list" });
    const again = onlyTask(o);
    expect([again.role, again.attempt]).toEqual(["planner", 1]);
    expect(h.state.data.retry_count).toBe(1);
    expect(h.state.meta.usage.model_calls).toBe(1);
    expect(eventsOf(o).find((e) => e.type === "stage" && e.status === "failed")).toMatchObject({
      description: expect.stringContaining("invalid_message"),
    });
  });

  it("treats a result claiming another op than the task's as invalid", () => {
    const h = harness();
    h.apply(inputs.start());
    h.apply({ ...resultFor(h.awaited(), out.approve()), op: "review_plan" } as never);
    expect(onlyTask(h.last!).attempt).toBe(1);
    expect(h.state.data.retry_count).toBe(1);
  });

  it("passes an ok:false outcome to the workflow as a failure", () => {
    const h = harness();
    h.apply(inputs.start());
    h.apply(failureFor(h.awaited(), failure("model_refused", false)));
    expect(onlyTask(h.last!).role).toBe("finalizer");
    expect(h.state.data.error_component).toBe("planner");
  });
});

describe("step: cancel", () => {
  it("cancels: notice in the outbox, awaiting cleared, error and complete events, timers cleared; later inputs dropped", () => {
    const h = harness();
    h.apply(inputs.start());
    const planner = h.awaited();
    const o = h.apply(inputs.cancel("user asked"));
    expect(h.state.meta).toMatchObject({
      status: "cancelled",
      awaiting: [],
      error: { code: "cancelled", message: "user asked" },
    });
    expect(o.outbox).toContainEqual({ kind: "cancel", notice: { v: 1, session_id: SID, reason: "user asked" } });
    expect(tasksOf(o)).toEqual([]);
    expect(eventsOf(o).map((e) => [e.type, "code" in e ? e.code : "status" in e ? e.status : null])).toEqual([
      ["error", "cancelled"],
      ["complete", "cancelled"],
    ]);
    expect(o.clearTimers).toEqual([`task:${planner.task_id}`, `session:${SID}`]);
    expect(o.commands).toEqual(["cancel"]);
    expect(h.state.data.final_answer).toBe(COULD_NOT_ANSWER);
    expect(h.send(resultFor(planner, out.plan([], ["e"])))).toMatchObject({ kind: "drop", reason: "terminal" });
    expect(h.send(inputs.cancel())).toMatchObject({ kind: "drop", reason: "terminal" });
  });

  it("sends the cancel notice even when no task is in flight", () => {
    const h = harness();
    const o = h.apply(inputs.cancel("changed my mind"));
    expect(o.outbox.filter((e) => e.kind === "cancel")).toHaveLength(1);
    expect(h.state.meta).toMatchObject({ version: 1, status: "cancelled" });
    expect(o.timers).toEqual([]);
    expect(h.send(inputs.start())).toMatchObject({ kind: "drop", reason: "terminal" });
  });
});

describe("step: timers", () => {
  it("treats an awaited task's deadline as a retryable failure: one retry, a new attempt", () => {
    const h = harness();
    h.apply(inputs.start());
    const planner = h.awaited();
    const o = h.apply(inputs.taskTimer(planner.task_id));
    const again = onlyTask(o);
    expect([again.role, again.attempt, again.task_id]).toEqual(["planner", 1, minted("", 2, 0, 1)]);
    expect(h.state.data.retry_count).toBe(1);
    expect(o.clearTimers).toContain(`task:${planner.task_id}`);
    expect(eventsOf(o).find((e) => e.type === "stage")).toMatchObject({
      status: "failed",
      description: expect.stringContaining("deadline_exceeded"),
    });
    // The first attempt's result is now late.
    expect(h.send(resultFor(planner, out.plan([], ["e"])))).toMatchObject({ kind: "drop", reason: "not_awaited" });
  });

  it("drops a deadline of a task no longer awaited", () => {
    const h = harness();
    const planner = planned(h);
    expect(h.send(inputs.taskTimer(planner.task_id))).toMatchObject({ kind: "drop", reason: "not_awaited" });
  });

  it("fails the session at its deadline and tells agents to stop", () => {
    const h = harness();
    h.apply(inputs.start());
    const o = h.apply(inputs.sessionTimer());
    expect(h.state.meta).toMatchObject({ status: "failed", awaiting: [], error: { code: "deadline_exceeded" } });
    expect(o.outbox.some((e) => e.kind === "cancel")).toBe(true);
    expect(eventsOf(o).at(-1)).toMatchObject({ type: "complete", status: "failed", final_answer: COULD_NOT_ANSWER });
    expect(o.clearTimers).toContain(`session:${SID}`);
  });

  it("ignores a session deadline on a session that has none", () => {
    const h = harness({ defaults: { ...DEFAULTS, sessionDeadlineMs: null } });
    h.apply(inputs.start());
    expect(h.send(inputs.sessionTimer())).toMatchObject({ kind: "drop", reason: "not_applicable" });
  });
});

describe("step: budgets", () => {
  const withBudget = (b: Partial<Budgets>) => harness({ defaults: { ...DEFAULTS, budgets: { ...UNLIMITED, ...b } } });

  /** Asserts the outcome ended the session for `budget` and dispatched nothing. */
  function expectExceeded(h: H, budget: string) {
    const o = h.last!;
    expect(o.kind).toBe("apply");
    expect(tasksOf(o)).toEqual([]);
    expect(h.state.meta.status).toBe("budget_exceeded");
    expect(h.state.meta.awaiting).toEqual([]);
    expect(h.state.meta.error).toMatchObject({ code: "budget_exceeded", message: expect.stringContaining(budget) });
    expect(
      eventsOf(o)
        .filter((e) => e.type !== "step" && !(e.type === "stage" && e.status === "completed"))
        .map((e) => e.type),
    ).toEqual(["error", "complete"]);
    expect(eventsOf(o).some((e) => e.type === "stage" && e.status === "running")).toBe(false);
    expect(eventsOf(o).at(-1)).toMatchObject({ status: "budget_exceeded" });
  }

  it("max_steps", () => {
    const h = withBudget({ max_steps: 2 });
    planned(h);
    expect(h.state.meta.usage.steps).toBe(2);
    h.reply(out.approve());
    expectExceeded(h, "max_steps");
  });

  it("max_tokens counts prompt and completion tokens", () => {
    const h = withBudget({ max_tokens: 100 });
    h.apply(inputs.start());
    h.reply(out.plan([], ["e"]), { prompt_tokens: 60, completion_tokens: 39 });
    expect(h.state.meta.status).toBe("running");
    h.reply(out.approve(), { prompt_tokens: 0, completion_tokens: 1 });
    expectExceeded(h, "max_tokens");
  });

  it("max_cost_usd", () => {
    const h = withBudget({ max_cost_usd: 0.01 });
    h.apply(inputs.start());
    h.reply(out.plan([], ["e"]), { cost_usd: 0.01 });
    expectExceeded(h, "max_cost_usd");
  });

  it("max_wall_ms", () => {
    const h = withBudget({ max_wall_ms: 1500 });
    h.apply(inputs.start());
    h.now = T0 + 1500;
    h.reply(out.plan([], ["e"]));
    expectExceeded(h, "max_wall_ms");
  });

  it("max_wall_ms ends a session whose agent never answers: the session timer fires at the budget", () => {
    const h = withBudget({ max_wall_ms: 1500 });
    const first = h.apply(inputs.start());
    expect(first.kind === "apply" && first.timers).toContainEqual({ member: `session:${SID}`, dueAt: T0 + 1500 });
    h.now = T0 + 1500;
    const o = h.apply(inputs.sessionTimer());
    expect(o.kind).toBe("apply");
    expect(h.state.meta.status).toBe("budget_exceeded");
    expect(h.state.meta.error).toMatchObject({
      code: "budget_exceeded",
      message: expect.stringContaining("max_wall_ms"),
    });
    expect(o.kind === "apply" && o.outbox.some((e) => e.kind === "cancel")).toBe(true);
  });

  it("a session deadline earlier than the wall budget fails the session as deadline_exceeded", () => {
    const h = withBudget({ max_wall_ms: 10 * DEFAULTS.sessionDeadlineMs! });
    h.apply(inputs.start());
    h.now = T0 + DEFAULTS.sessionDeadlineMs!;
    h.apply(inputs.sessionTimer());
    expect(h.state.meta.status).toBe("failed");
    expect(h.state.meta.error?.code).toBe("deadline_exceeded");
  });

  it("does not stop a run that completes at its last allowed step", () => {
    const h = withBudget({ max_steps: 5 });
    planned(h, []);
    h.reply(out.approve());
    h.reply(out.answer("A"));
    h.reply(out.approve());
    const last = h.reply(out.finalize("done"));
    expect(h.state.meta).toMatchObject({ status: "completed", usage: { steps: 5 } });
    expect(last.commands).toEqual(["complete"]);
    expect(last.clearTimers).toEqual([minted("task:", 5, 0, 0), `session:${SID}`]);
    expect(last.outbox.some((e) => e.kind === "cancel")).toBe(false);
  });
});

describe("step: our own faults", () => {
  it("fails the session as internal instead of publishing an invalid task", () => {
    const h = harness();
    planned(h, ["r1", "r2"]);
    h.reply(out.approve());
    h.reply(out.research("a"));
    // Session data allows any step text; the researcher request bounds it to 2000 characters.
    const tooLong = "x".repeat(2001);
    h.state = { ...h.state, data: { ...h.state.data, research_steps: ["r1", tooLong] } };
    const o = h.reply(out.approve());
    expect(tasksOf(o)).toEqual([]);
    expect(h.state.meta).toMatchObject({
      status: "failed",
      awaiting: [],
      error: { code: "internal", message: expect.stringContaining("researcher.research") },
    });
    expect(h.state.meta.usage.steps).toBe(4);
    expect(eventsOf(o).some((e) => e.type === "stage" && e.status === "running")).toBe(false);
  });

  it("fails with payload_too_large rather than publish a task the broker would refuse", () => {
    const h = harness();
    const steps = Array.from({ length: LIMITS.maxListItems }, (_, i) => `step ${i}`);
    planned(h, steps);
    h.reply(out.approve());
    for (let i = 0; i < steps.length; i++) {
      h.reply(out.research("z".repeat(15_000)));
      h.reply(out.approve());
    }
    expect(tasksOf(h.last!)).toEqual([]);
    expect(h.state.meta).toMatchObject({
      status: "failed",
      error: { code: "payload_too_large", message: expect.stringContaining("expert.answer") },
    });
  });
});

describe("replay", () => {
  it("reproduces the final state from the logged inputs, drops included", () => {
    const h = harness();
    const planner = planned(h, ["r1", "r2"]);
    h.send(resultFor(planner, out.plan([], ["dup"])));
    h.reply(out.approve());
    h.fail(failure("tool_error", true));
    h.reply(out.research("a"));
    h.reply(out.reject("more"));
    h.reply(out.research("b"));
    h.reply(out.approve());
    h.reply(out.research("c"));
    h.reply(out.approve());
    h.reply(out.answer("A"));
    h.reply(out.approve());
    h.reply(out.finalize("F"));
    expect(h.state.meta.status).toBe("completed");
    const replayed: SessionState = replay(h.initial, h.log, h.defaults);
    expect(replayed).toEqual(h.state);
    expect(replay(h.initial, h.log.slice(0, 3), h.defaults)).not.toEqual(h.state);
  });
});

describe("step: the stored state's size", () => {
  /** A session researching its first step (slot 0 pending) whose 17 other results are `results(i)`. */
  const researching = (results: (i: number) => string) => {
    const h = harness();
    h.apply(inputs.start());
    h.reply(out.plan(["first", "second"]));
    h.reply(out.approve());
    h.state = {
      ...h.state,
      data: { ...h.state.data, research_results: ["pending", ...Array.from({ length: 17 }, (_, i) => results(i))] },
    };
    return h;
  };

  it("fails the session with payload_too_large instead of growing its state past LIMITS.maxStateBytes", () => {
    // Slot 0 (the step being researched) small, then 17 results of 20,000 three-byte characters:
    // just under 1 MiB stored; the big answer for slot 0 takes it over.
    const big = "€".repeat(LIMITS.maxTextChars);
    const h = researching(() => big);
    const before = new TextEncoder().encode(JSON.stringify(h.state)).length;
    expect(before).toBeLessThanOrEqual(LIMITS.maxStateBytes);
    const o = h.reply(out.research(big));
    expect(h.state.meta.status).toBe("failed");
    expect(h.state.meta.error).toMatchObject({
      code: "payload_too_large",
      message: expect.stringMatching(/state would grow to \d+ bytes, over the 1048576-byte limit/),
    });
    expect(new TextEncoder().encode(JSON.stringify(h.state)).length).toBeLessThanOrEqual(LIMITS.maxStateBytes);
    expect(h.state.data.research_results[0]).toBe("pending");
    expect(eventsOf(o).at(-1)).toMatchObject({ type: "complete", status: "failed" });
    expect(h.state.meta.awaiting).toEqual([]);
  });

  it("counts bytes, not a bound, once a state could be near the limit: a state under 1 MiB of UTF-8 whose code units × 3 exceed it goes on", () => {
    // after the answer: ~360,000 UTF-16 code units (three times that is over the limit) but ~780 KB of UTF-8
    const euros = "€".repeat(LIMITS.maxTextChars);
    const ascii = "a".repeat(LIMITS.maxTextChars);
    const h = researching((i) => (i < 10 ? euros : ascii));
    h.reply(out.research(ascii));
    expect(JSON.stringify(h.state).length * 3).toBeGreaterThan(LIMITS.maxStateBytes);
    expect(h.state.meta.status).toBe("running");
    expect(h.state.data.research_results[0]).toBe(ascii);
    expect(new TextEncoder().encode(JSON.stringify(h.state)).length).toBeLessThanOrEqual(LIMITS.maxStateBytes);
  });
});
