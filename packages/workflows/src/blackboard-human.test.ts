import { describe, expect, it } from "vitest";
import type { CriticReport } from "@agentmesh/contracts";
import { bbHarness, bbOut, type BbHarness } from "./blackboard-testkit.js";
import { DEFAULTS, SID, T0, UNLIMITED, eventsOf, failure, inputs, tasksOf } from "./testing.js";
import type { RuntimeDefaults } from "./types.js";

const QUESTION = "Do you want the result as a fraction or a decimal?";
const HOUR = 3_600_000;
const DAY = DEFAULTS.pauseTimeoutMs ?? 0;
const asks = (over: Partial<CriticReport> = {}) =>
  bbOut.report(true, { requires_human_input: true, question_for_human: QUESTION, ...over });

/** Runs the session to the critic of step 1 and has it ask a person; returns the pausing outcome. */
function paused(h: BbHarness, report = asks(), plan = bbOut.plan()) {
  h.start();
  h.answer("perception.perceive", bbOut.perception());
  h.answer("executor.list_tools", bbOut.tools());
  h.answer("memory.update", bbOut.memory());
  h.answer("decision.plan", plan);
  h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
  h.answer("perception.perceive", bbOut.perception());
  h.answer("critic.report", report);
  return h.answer("memory.update", bbOut.memory());
}

describe("human input: pause", () => {
  it("pauses with the critic's question after memory took in the step, and stops the wall clock", () => {
    const h = bbHarness();
    const o = paused(h);
    const at = h.now - 1000;
    expect(h.state.meta).toMatchObject({
      status: "awaiting_user",
      awaiting: [],
      deadline_at: null,
      paused_ms: 0,
      pause: { since: at, deadline_left_ms: T0 + HOUR - at },
    });
    expect(h.state.data).toMatchObject({
      phase: "awaiting_user",
      question_for_human: QUESTION,
      questions_asked: 1,
      next_action: { kind: "ask_human", acceptable: true },
    });
    expect(o.commands).toEqual(["await_user"]);
    expect(o.clearTimers).toContain(`session:${SID}`);
    // The deadline's timer is replaced by the pause's expiry.
    expect(o.timers).toEqual([{ member: `session:${SID}`, dueAt: at + DAY }]);
    expect(h.state.meta.pause?.expires_at).toBe(at + DAY);
    expect(eventsOf(o)).toContainEqual(
      expect.objectContaining({ type: "stage", name: "awaiting_user", status: "running", description: QUESTION }),
    );
  });

  it("does not end a paused session when a session-deadline timer fires", () => {
    const h = bbHarness();
    paused(h);
    h.now += 2 * HOUR;
    const before = structuredClone(h.state);
    expect(h.sessionTimer()).toMatchObject({
      kind: "drop",
      reason: "not_applicable",
      detail: expect.stringContaining("waiting for a person"),
    });
    expect(h.state).toEqual(before);
  });

  it("expires when nobody answers within the pause limit: failed, with error and complete events, everything disarmed", () => {
    const h = bbHarness();
    paused(h);
    const since = h.state.meta.pause!.since;
    h.now = since + DAY - 1;
    expect(h.sessionTimer()).toMatchObject({ kind: "drop", reason: "not_applicable" });
    h.now = since + DAY;
    const o = h.sessionTimer();
    expect(o.kind).toBe("apply");
    expect(h.state.meta).toMatchObject({ status: "failed", pause: null, error: { code: "deadline_exceeded" } });
    expect(h.state.meta.error?.message).toMatch(/expired: nobody answered its question within 86400000 ms/);
    const events = eventsOf(o);
    expect(events).toContainEqual(expect.objectContaining({ type: "error", code: "deadline_exceeded" }));
    expect(events.at(-1)).toMatchObject({ type: "complete", status: "failed" });
    expect(o.kind === "apply" && o.clearTimers).toContain(`session:${SID}`);
    expect(o.kind === "apply" && o.timers).toEqual([]);
    // A late answer is not applied to the finished session.
    expect(h.reply("too late")).toMatchObject({ kind: "drop", reason: "terminal" });
  });

  it("an answer disarms the pause's expiry even when the session has no deadline to re-arm", () => {
    const h = bbHarness({ defaults: { ...DEFAULTS, sessionDeadlineMs: null } });
    paused(h);
    expect(h.state.meta.pause).toMatchObject({ deadline_left_ms: null, expires_at: expect.any(Number) });
    const o = h.reply("decimal, please");
    expect(o.kind === "apply" && o.clearTimers).toContain(`session:${SID}`);
    expect(o.kind === "apply" && o.timers.some((t) => t.member === `session:${SID}`)).toBe(false);
  });

  it("does not charge the pause to the wall-clock budget", () => {
    const defaults: RuntimeDefaults = {
      budgets: { ...UNLIMITED, max_wall_ms: 60_000 },
      ceilings: UNLIMITED,
      taskDeadlineMs: 30_000,
      sessionDeadlineMs: null,
      pauseTimeoutMs: null,
    };
    const h = bbHarness({ defaults });
    paused(h);
    h.now += HOUR;
    const o = h.reply("decimal, please");
    expect(o.kind).toBe("apply");
    expect(h.state.meta.status).toBe("running");
    expect(tasksOf(o).map((t) => `${t.role}.${t.op}`)).toEqual(["memory.update"]);

    // The same hour without a pause is over budget.
    const busy = bbHarness({ defaults });
    busy.start();
    busy.now += HOUR;
    busy.answer("executor.list_tools", bbOut.tools());
    expect(busy.state.meta.status).toBe("budget_exceeded");
  });

  it("asks at most 3 questions per session; later requests for input are noted, not asked", () => {
    const h = bbHarness();
    paused(h, asks(), bbOut.plan(["calculator", "calculator", "calculator", "calculator"]));
    for (let n = 2; n <= 4; n++) {
      h.reply(`answer ${n - 1}`);
      h.answer("memory.update", bbOut.memory());
      h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
      h.answer("perception.perceive", bbOut.perception());
      h.answer("critic.report", asks());
      h.answer("memory.update", bbOut.memory());
    }
    expect(h.state.data.questions_asked).toBe(3);
    expect(h.state.meta.status).toBe("running");
    expect(h.state.data.trace.join("\n")).toContain("the person was not asked again (question limit reached)");
    expect(h.state.data.user_replies).toEqual(["answer 1", "answer 2", "answer 3"]);
  });
});

describe("human input: resume", () => {
  it("resumes on the reply: the pause goes to paused_ms, the deadline moves that much later, memory gets the answer", () => {
    const h = bbHarness();
    paused(h);
    const left = h.state.meta.pause!.deadline_left_ms!;
    const since = h.state.meta.pause!.since;
    h.now += 2 * HOUR;
    const o = h.reply("decimal, please");
    expect(o.kind).toBe("apply");
    const now = h.now - 1000;
    expect(h.state.meta).toMatchObject({
      status: "running",
      pause: null,
      paused_ms: now - since,
      deadline_at: now + left,
    });
    expect(o.kind === "apply" && o.timers).toContainEqual({ member: `session:${SID}`, dueAt: now + left });
    expect(o.kind === "apply" && o.commands[0]).toBe(`resume after ${now - since} ms`);
    expect(h.input(h.task("memory.update")).event).toEqual({
      kind: "user_reply",
      question_for_human: QUESTION,
      text: "decimal, please",
    });
  });

  it("goes on to the next step when the critic had found the step acceptable, the answer in memory and in the summary", () => {
    const h = bbHarness();
    paused(h);
    h.reply("decimal, please");
    h.answer("memory.update", {
      ...bbOut.memory(),
      short_term: [{ kind: "user", content: "decimal, please", step_index: null }],
    });
    const summarize = h.input(h.task("executor.execute:tool"));
    expect(summarize).toMatchObject({ step: { tool: "summarize" }, context: { user_replies: ["decimal, please"] } });
    expect(h.state.data.memory.short_term).toContainEqual({
      kind: "user",
      content: "decimal, please",
      step_index: null,
    });
  });

  it("rewrites with the person's answer when the step was not acceptable", () => {
    const h = bbHarness();
    paused(h, asks({ is_acceptable: false, quality: 0.3, rewrite_suggestion: "Ask for the format first" }));
    h.reply("a fraction");
    h.answer("memory.update", bbOut.memory());
    expect(h.input(h.task("decision.plan")).rewrite_suggestion).toBe(
      `Ask for the format first The person was asked "${QUESTION}" and answered: a fraction`,
    );
  });

  it("puts the reply in memory itself when the memory agent fails", () => {
    const h = bbHarness();
    paused(h);
    h.reply("decimal, please");
    h.failTask("memory.update", failure("needs_model", false));
    expect(h.state.data.memory.short_term.at(-1)).toEqual({
      kind: "user",
      content: "decimal, please",
      step_index: null,
    });
  });

  it("drops a session timer armed before the pause, and ends the session at the moved deadline", () => {
    const h = bbHarness();
    paused(h);
    h.now = T0 + 2 * HOUR;
    h.reply("decimal, please");
    const deadline = h.state.meta.deadline_at!;
    // The original deadline (T0 + 1 h) has passed in wall time, but not in session time.
    expect(h.sessionTimer()).toMatchObject({
      kind: "drop",
      reason: "not_applicable",
      detail: expect.stringContaining("stale session timer"),
    });
    expect(h.state.meta.status).toBe("running");
    h.now = deadline;
    h.sessionTimer();
    expect(h.state.meta).toMatchObject({ status: "failed", error: { code: "deadline_exceeded" } });
  });

  it("ends at the first dispatch after the moved deadline even if its timer was lost", () => {
    const h = bbHarness();
    paused(h);
    h.reply("decimal, please");
    h.now = h.state.meta.deadline_at! + 1;
    h.answer("memory.update", bbOut.memory());
    expect(h.state.meta).toMatchObject({ status: "failed", awaiting: [], error: { code: "deadline_exceeded" } });
  });

  it("drops a reply when the session is not waiting for one", () => {
    const h = bbHarness();
    h.start();
    expect(h.reply("hello?")).toMatchObject({ kind: "drop", reason: "not_applicable" });
  });

  it("cancels a paused session and settles its paused time", () => {
    const h = bbHarness({ defaults: DEFAULTS });
    paused(h);
    const since = h.state.meta.pause!.since;
    h.now += 5000;
    h.apply(inputs.cancel("never mind"));
    expect(h.state.meta).toMatchObject({ status: "cancelled", pause: null, paused_ms: h.now - 1000 - since });
    expect(h.state.data.final_answer).toContain("never mind");
  });
});
