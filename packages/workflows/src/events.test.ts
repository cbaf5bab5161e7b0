import { describe, expect, it } from "vitest";
import { LIMITS, OPS, SessionEvent } from "@agentmesh/contracts";
import { blackboard } from "./blackboard.js";
import { CORPUS_QUESTION, bbHarness, bbOut, drive, goodAgents, type Script } from "./blackboard-testkit.js";
import { boundedArgs } from "./events.js";
import { DEFAULTS, eventsOf, failure, harness, inputs, out, recordEvents as record } from "./testing.js";
import { applyControl, openDraft, seal } from "./transition.js";

type Stage = Extract<SessionEvent, { type: "stage" }>;

const stagesOf = (events: readonly SessionEvent[]) => events.filter((e): e is Stage => e.type === "stage");
const trail = (events: readonly SessionEvent[]) => stagesOf(events).map((e) => `${e.name} ${e.status}`);

/**
 * The life of every stage: it runs (a parallel round announces each of its tasks, so `running`
 * may repeat), then it completes or fails; nothing ends that did not run, and at the end of the
 * session nothing is still running.
 */
function expectStagesClosed(events: readonly SessionEvent[]): void {
  const running = new Set<string>();
  for (const e of stagesOf(events)) {
    if (e.status === "running") running.add(e.name);
    else {
      expect(running.has(e.name), `${e.name} ${e.status} but it was not running`).toBe(true);
      running.delete(e.name);
    }
  }
  expect([...running], "stages still running at the end").toEqual([]);
}

describe("stage events of a critic-chain run", () => {
  it("have their shape: each stage runs, then completes, in the chain's order", () => {
    const h = harness();
    const events = record(h);
    h.apply(inputs.start());
    h.reply(out.plan(["r1"], ["e1"]));
    h.reply(out.approve());
    h.reply(out.research("found it"));
    h.reply(out.approve());
    h.reply(out.answer("Gene editing"));
    h.reply(out.approve());
    h.reply(out.finalize("CRISPR is gene editing"));
    expect(h.state.meta.status).toBe("completed");
    for (const e of stagesOf(events)) expect(SessionEvent.parse(e)).toEqual(e);
    const steps = [
      "planner",
      "critic_planner",
      "researcher",
      "critic_researcher",
      "expert",
      "critic_expert",
      "finalizer",
    ];
    expect(trail(events)).toEqual(steps.flatMap((s) => [`${s} running`, `${s} completed`]));
    expect(stagesOf(events)[0]).toMatchObject({ description: expect.stringContaining("Develop a logical plan") });
  });

  it("fail where an agent failed: a retry runs the stage again, a final failure hands over to the finalizer", () => {
    const h = harness();
    const events = record(h);
    h.apply(inputs.start());
    h.reply(out.plan(["r1"], ["e1"]));
    h.reply(out.approve());
    h.fail(failure("model_rate_limited", true));
    h.fail(failure("model_refused", false));
    h.reply(out.finalize("partial"));
    expect(trail(events).slice(4)).toEqual([
      "researcher running",
      "researcher failed",
      "researcher running",
      "researcher failed",
      "finalizer running",
      "finalizer completed",
    ]);
    const [retried, final] = stagesOf(events).filter((e) => e.status === "failed");
    expect(retried?.description).toMatch(/^failed \(model_rate_limited: .*\); retries 1\/5$/);
    expect(final?.description).toMatch(/^failed \(model_refused: .*\); handing over to the finalizer$/);
    expectStagesClosed(events);
  });

  it("fail when the finalizer fails, and the session with it", () => {
    const h = harness();
    const events = record(h);
    h.apply(inputs.start());
    h.reply(out.plan([], ["e1"]));
    h.reply(out.approve());
    h.reply(out.answer("a"));
    h.reply(out.approve());
    h.fail(failure("model_refused", false));
    expect(trail(events).slice(-2)).toEqual(["finalizer running", "finalizer failed"]);
    expect(h.state.meta.status).toBe("failed");
    expectStagesClosed(events);
  });
});

describe("stage events of a blackboard run", () => {
  it("a full CONSERVATIVE run: every stage runs and completes, none fails", () => {
    const h = bbHarness();
    const events = record(h);
    h.start();
    drive(h, goodAgents);
    expect(h.state.meta.status).toBe("completed");
    for (const e of stagesOf(events)) expect(SessionEvent.parse(e)).toEqual(e);
    expectStagesClosed(events);
    expect(new Set(stagesOf(events).map((e) => e.status))).toEqual(new Set(["running", "completed"]));
    expect(new Set(stagesOf(events).map((e) => e.name))).toEqual(
      new Set(["perception", "tools", "memory", "decision", "executor", "critic"]),
    );
    // One running and one completed per task, in a run without parallel strategies.
    expect(stagesOf(events).filter((e) => e.status === "running")).toHaveLength(h.state.meta.usage.steps);
  });

  it("an EXPLORATORY corpus run: parallel strategies each announce their task, the round completes once", () => {
    const lookup: Script = (task, input, data) =>
      task.role === "perception" && input.kind === "query"
        ? { output: bbOut.perception("lookup") }
        : goodAgents(task, input, data);
    const h = bbHarness({ profile: "EXPLORATORY", query: CORPUS_QUESTION });
    const events = record(h);
    h.start();
    drive(h, lookup);
    expect(h.state.meta.status).toBe("completed");
    expectStagesClosed(events);
    const executor = trail(events).filter((s) => s.startsWith("executor"));
    expect(executor.slice(0, 4)).toEqual([
      "executor running",
      "executor running",
      "executor running",
      "executor completed",
    ]);
    expect(trail(events)).toContain("retriever completed");
  });

  it("an agent failure: each failed attempt is `failed`, the next attempt runs again", () => {
    const h = bbHarness();
    const events = record(h);
    h.start();
    h.answer("executor.list_tools", bbOut.tools());
    h.failTask("perception.perceive", failure("model_error", true));
    h.deadline("perception.perceive");
    h.answer("perception.perceive", bbOut.perception());
    expect(trail(events).filter((s) => s.startsWith("perception"))).toEqual([
      "perception running",
      "perception failed",
      "perception running",
      "perception failed",
      "perception running",
      "perception completed",
    ]);
    expect(stagesOf(events).find((e) => e.status === "failed")?.description).toBe(
      "failed (model_error: model_error happened); attempt 2 of 3",
    );
  });

  it("a failure retries cannot fix is reported under the stage that ran (tools, not executor)", () => {
    const h = bbHarness();
    const events = record(h);
    h.start();
    h.failTask("executor.list_tools", failure("model_refused", false));
    expect(trail(events)).toEqual(["perception running", "tools running", "tools failed"]);
  });

  it("a step whose every strategy failed is a failed executor stage; limits running out fail the coordinator", () => {
    const failing: Script = (task, input, data) =>
      task.role === "executor" && task.op === "execute"
        ? { output: bbOut.fail("tool", "calculator", "tool_unavailable", false) }
        : goodAgents(task, input, data);
    const h = bbHarness();
    const events = record(h);
    h.start();
    drive(h, failing);
    expect(h.state.meta.status).toBe("completed");
    expect(trail(events)).toContain("executor failed");
    expect(stagesOf(events).find((e) => e.name === "executor" && e.status === "failed")?.description).toMatch(
      /^every strategy failed; next: /,
    );
    expect(stagesOf(events).at(-1)).toMatchObject({
      name: "coordinator",
      status: "failed",
      description: expect.stringMatching(/^gave up: /),
    });
  });

  it("waiting for a person is the awaiting_user stage: running until the reply completes it", () => {
    const asking: Script = (task, input, data) =>
      task.role === "critic" && data.questions_asked === 0
        ? { output: bbOut.report(true, { requires_human_input: true, question_for_human: "Which units?" }) }
        : goodAgents(task, input, data);
    const h = bbHarness();
    const events = record(h);
    h.start();
    drive(h, asking);
    expect(h.state.meta.status).toBe("awaiting_user");
    expect(stagesOf(events).at(-1)).toMatchObject({
      name: "awaiting_user",
      status: "running",
      description: "Which units?",
    });
    h.reply("metres");
    drive(h, asking);
    expect(h.state.meta.status).toBe("completed");
    expect(trail(events)).toContain("awaiting_user completed");
    expectStagesClosed(events);
  });
});

describe("boundedArgs: a tool call's arguments for its event", () => {
  const cap = LIMITS.maxToolArgsChars;
  const asEvent = (b: ReturnType<typeof boundedArgs>) =>
    SessionEvent.parse({
      v: 1,
      session_id: "sess_test_0001",
      version: 1,
      index: 0,
      timestamp: 0,
      type: "tool_call",
      id: "c1",
      task_id: "t",
      tool: "run_python",
      ...b,
    });

  it("keeps arguments that fit as they are, unmarked", () => {
    expect(boundedArgs({ expression: "2 + 2" })).toEqual({ args: { expression: "2 + 2" }, args_truncated: false });
    expect(boundedArgs({})).toEqual({ args: {}, args_truncated: false });
  });

  it("wraps a value that is not an object", () => {
    expect(boundedArgs("2 + 2")).toEqual({ args: { value: "2 + 2" }, args_truncated: false });
    expect(boundedArgs(undefined)).toEqual({ args: { value: null }, args_truncated: false });
  });

  it("cuts long strings first, keeping every key, and marks the cut", () => {
    const b = boundedArgs({ code: "x".repeat(50_000), language: "python" });
    expect(b.args_truncated).toBe(true);
    expect(Object.keys(b.args)).toEqual(["code", "language"]);
    expect(b.args.language).toBe("python");
    expect(b.args.code).toMatch(/^x+…$/);
    expect(JSON.stringify(b.args).length).toBeLessThanOrEqual(cap);
    asEvent(b);
  });

  it("falls back to the start of the JSON when cutting strings is not enough", () => {
    const many = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, i]));
    const b = boundedArgs(many);
    expect(b).toMatchObject({
      args_truncated: true,
      args: { truncated_json: expect.stringMatching(/^\{"k0":0,"k1":1,.*…$/) },
    });
    expect(JSON.stringify(b.args).length).toBeLessThanOrEqual(cap);
    asEvent(b);
    // Quotes double in length when the JSON is quoted again; the result still fits.
    const quoted = boundedArgs({ list: Array.from({ length: 3000 }, () => '"') });
    expect(JSON.stringify(quoted.args).length).toBeLessThanOrEqual(cap);
    asEvent(quoted);
  });
});

describe("the runtime announces a tool call with its task", () => {
  const toRound = () => {
    const h = bbHarness();
    h.start();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    return h;
  };

  it("only when the task is really dispatched: a budget that stops it announces nothing", () => {
    const h = bbHarness({ options: { budgets: { max_steps: 4 } } });
    const events = record(h);
    h.start();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    h.answer("decision.plan", bbOut.plan());
    expect(h.state.meta.status).toBe("budget_exceeded");
    expect(events.filter((e) => e.type === "tool_call")).toEqual([]);
    expect(trail(events).filter((s) => s.startsWith("executor"))).toEqual([]);
  });

  it("with its arguments capped to LIMITS.maxToolArgsChars and marked", () => {
    const h = toRound();
    h.answer("decision.plan", bbOut.plan());
    const task = h.task("executor.execute:tool");
    const d = openDraft(h.state, blackboard, { now: h.now, defaults: DEFAULTS }, "test:input");
    const toolCall = { id: "c1", tool: "run_python", args: { code: "print(1)\n".repeat(2000) } };
    applyControl(d, {
      kind: "dispatch",
      tasks: [
        {
          role: "executor",
          op: "execute",
          input: OPS.executor.execute.request.parse(h.input(task)),
          attempt: 1,
          stage: "executor",
          description: "run it",
          toolCall,
        },
      ],
    });
    const o = seal(d);
    const [sent] = o.kind === "apply" ? o.outbox.flatMap((e) => (e.kind === "task" ? [e.task] : [])) : [];
    const call = eventsOf(o).find((e) => e.type === "tool_call");
    expect(call).toMatchObject({
      id: "c1",
      task_id: sent?.task_id,
      tool: "run_python",
      args_truncated: true,
      args: { code: expect.stringMatching(/^print\(1\)\n.*…$/s) },
    });
    expect(JSON.stringify(call?.type === "tool_call" && call.args).length).toBeLessThanOrEqual(LIMITS.maxToolArgsChars);
    // Right after the stage it belongs to.
    expect(
      eventsOf(o)
        .map((e) => e.type)
        .slice(-2),
    ).toEqual(["stage", "tool_call"]);
  });

  it("with secrets hidden: a secret-named argument and URL credentials, while the task keeps them as given", () => {
    const h = toRound();
    h.answer("decision.plan", bbOut.plan());
    const task = h.task("executor.execute:tool");
    const d = openDraft(h.state, blackboard, { now: h.now, defaults: DEFAULTS }, "test:input");
    const args = { url: "https://ada:hunter22@api.example.com/data", api_key: "sk-live-0123456789", query: "weather" };
    applyControl(d, {
      kind: "dispatch",
      tasks: [
        {
          role: "executor",
          op: "execute",
          input: { ...OPS.executor.execute.request.parse(h.input(task)) },
          attempt: 1,
          stage: "executor",
          description: "fetch it",
          toolCall: { id: "c2", tool: "http_get", args },
        },
      ],
    });
    const o = seal(d);
    const call = eventsOf(o).find((e) => e.type === "tool_call");
    expect(call?.type === "tool_call" && call.args).toEqual({
      url: "https://ada:***@api.example.com/data",
      api_key: "***",
      query: "weather",
    });
    expect(JSON.stringify(eventsOf(o))).not.toMatch(/hunter22|sk-live/);
    expect(args.api_key).toBe("sk-live-0123456789");
  });
});
