import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ExecutionStrategy, StepResult, StrategyProfile } from "@agentmesh/contracts";
import { bestResult } from "./blackboard-execution.js";
import { JOIN_DEADLINE_MS } from "./blackboard-tasks.js";
import { bbHarness, bbOut, keyOf, type BbHarness } from "./blackboard-testkit.js";
import { eventsOf, failure, resultFor, tasksOf } from "./testing.js";

/** Start, perceive, list tools, remember, plan: the session is at its first plan step's round. */
function toExecution(h: BbHarness, plan = bbOut.plan()) {
  h.start();
  h.answer("perception.perceive", bbOut.perception());
  h.answer("executor.list_tools", bbOut.tools());
  h.answer("memory.update", bbOut.memory());
  return h.answer("decision.plan", plan);
}

const TOOL: Record<ExecutionStrategy, string> = { tool: "calculator", rag: "corpus_search", web: "web_search" };
const good = (s: ExecutionStrategy) => bbOut.ok(s, TOOL[s], `${s} says 8`);
const bad = (s: ExecutionStrategy, retryable = true) =>
  bbOut.fail(s, TOOL[s], retryable ? "tool_error" : "tool_unavailable", retryable);
const harness = (profile: StrategyProfile) => bbHarness({ profile });
const awaitedKeys = (h: BbHarness) => h.state.meta.awaiting.map(keyOf);

describe("EXPLORATORY: parallel strategies", () => {
  it("dispatches tool, rag and web at once, sharing one join deadline", () => {
    const h = harness("EXPLORATORY");
    const o = toExecution(h);
    const tasks = tasksOf(o);
    expect(tasks.map((t) => [t.role, t.op, (t.input as { strategy: string }).strategy])).toEqual([
      ["executor", "execute", "tool"],
      ["executor", "execute", "rag"],
      ["executor", "execute", "web"],
    ]);
    expect(awaitedKeys(h)).toEqual(["executor.execute:tool", "executor.execute:rag", "executor.execute:web"]);
    const dueAt = h.now - 1000 + JOIN_DEADLINE_MS;
    expect(tasks.map((t) => t.deadline_at)).toEqual([dueAt, dueAt, dueAt]);
    expect(tasks.map((t) => (t.input as { query: string | null }).query)).toEqual([
      null,
      "Use calculator for part 1",
      "Use calculator for part 1",
    ]);
    expect(h.state.data.round).toMatchObject({ mode: "parallel", pending: ["tool", "rag", "web"], results: [] });
  });

  it("keeps waiting until every strategy is in", () => {
    const h = harness("EXPLORATORY");
    toExecution(h);
    const o = h.answer("executor.execute:web", good("web"));
    expect(tasksOf(o)).toEqual([]);
    expect(awaitedKeys(h)).toEqual(["executor.execute:tool", "executor.execute:rag"]);
    expect(h.state.data.phase).toBe("execute");
  });

  it("picks the best success by priority tool > rag > web, whatever the arrival order", () => {
    const orders: ExecutionStrategy[][] = [
      ["tool", "rag", "web"],
      ["tool", "web", "rag"],
      ["rag", "tool", "web"],
      ["rag", "web", "tool"],
      ["web", "tool", "rag"],
      ["web", "rag", "tool"],
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...orders),
        fc.record({ tool: fc.boolean(), rag: fc.boolean(), web: fc.boolean() }),
        (order, succeeds) => {
          const h = harness("EXPLORATORY");
          toExecution(h);
          for (const s of order) h.answer(`executor.execute:${s}`, succeeds[s] ? good(s) : bad(s));
          const winner = (["tool", "rag", "web"] as const).find((s) => succeeds[s]);
          const chosen = h.state.data.step_results.filter((r) => r.chosen).map((r) => r.result.strategy);
          if (winner) {
            expect(chosen).toEqual([winner]);
            expect(h.state.data.phase).toBe("perceive_result");
            expect(h.input(h.task("perception.perceive")).result).toMatchObject({ strategy: winner, ok: true });
          } else {
            expect(chosen).toEqual([]);
            expect(h.state.data.phase).toBe("remember_step");
          }
          expect(h.state.data.step_results.map((r) => r.result.strategy)).toEqual(order);
        },
      ),
      { numRuns: 60 },
    );
    expect(bestResult([good("web"), good("rag"), bad("tool")])?.strategy).toBe("rag");
  });

  it("joins at the deadline with the results in so far, abandons the rest, and drops a late result", () => {
    const h = harness("EXPLORATORY");
    toExecution(h);
    const rag = h.task("executor.execute:rag");
    h.answer("executor.execute:tool", good("tool"));
    const joined = h.deadline("executor.execute:web");
    expect(awaitedKeys(h)).toEqual(["perception.perceive"]);
    expect(joined.commands).toContain(`abandon ${rag.task_id}`);
    expect(joined.clearTimers).toContain(`task:${rag.task_id}`);
    expect(
      h.state.data.step_results.map((r) => [r.result.strategy, r.result.ok, r.chosen, r.result.error?.code ?? null]),
    ).toEqual([
      ["tool", true, true, null],
      ["web", false, false, "deadline_exceeded"],
    ]);
    expect(h.state.data.trace.at(-1)).toContain("rag abandoned at the join deadline");

    const before = structuredClone(h.state);
    const late = h.send(resultFor(rag, good("rag")));
    expect(late).toMatchObject({ kind: "drop", reason: "not_awaited" });
    expect(h.state).toEqual(before);
  });

  it("joins at the deadline on a partial success of a lower-priority strategy", () => {
    const h = harness("EXPLORATORY");
    toExecution(h);
    h.answer("executor.execute:rag", good("rag"));
    h.deadline("executor.execute:tool");
    expect(h.state.data.step_outcome).toMatchObject({ strategy: "rag", ok: true });
    expect(h.state.meta.awaiting.map(keyOf)).toEqual(["perception.perceive"]);
  });

  it("records latency and success of every strategy in the tool performance log", () => {
    const h = harness("EXPLORATORY");
    toExecution(h);
    h.answer(
      "executor.execute:tool",
      bbOut.ok("tool", "calculator", "8", {
        latency_ms: 12,
        records: [{ tool: "calculator", args_digest: "ab".repeat(32), latency_ms: 12, outcome: "ok", attempt: 1 }],
      }),
    );
    h.answer("executor.execute:rag", good("rag"));
    h.deadline("executor.execute:web");
    const log = h.state.data.tool_performance_log.map((e) => [
      e.strategy,
      e.record.tool,
      e.record.outcome,
      e.record.latency_ms,
      e.step_index,
      e.plan_version,
    ]);
    expect(log).toEqual([
      ["tool", "calculator", "ok", 12, 0, 1],
      ["rag", "corpus_search", "ok", 7, 0, 1],
      // The deadline's latency is the time from dispatch to the join.
      ["web", "web_search", "deadline_exceeded", 3000, 0, 1],
    ]);
    expect(eventsOf(h.last!)).toContainEqual(
      expect.objectContaining({
        type: "stage",
        name: "executor",
        status: "completed",
        description: "chose tool (calculator)",
      }),
    );
  });

  it("runs the summarize step as a tool only, without rag or web", () => {
    const h = harness("EXPLORATORY");
    toExecution(h);
    for (const s of ["tool", "rag", "web"] as const) h.answer(`executor.execute:${s}`, good(s));
    h.answer("perception.perceive", bbOut.perception());
    h.answer("critic.report", bbOut.report(true));
    const o = h.answer("memory.update", bbOut.memory());
    expect(tasksOf(o).map((t) => (t.input as { strategy: string; step: { tool: string } }).step.tool)).toEqual([
      "summarize",
    ]);
    expect(awaitedKeys(h)).toEqual(["executor.execute:tool"]);
    expect(tasksOf(o)[0]?.deadline_at).toBe(h.now - 1000 + h.defaults.taskDeadlineMs!);
  });

  it("treats a step whose three strategies all failed as failed, and retries it when a failure was transient", () => {
    const h = harness("EXPLORATORY");
    toExecution(h);
    h.answer("executor.execute:tool", bad("tool"));
    h.answer("executor.execute:rag", bad("rag", false));
    h.failTask("executor.execute:web", failure("invalid_message", true, "bad output"));
    const memory = h.input(h.task("memory.update"));
    expect(memory.event).toMatchObject({
      kind: "step",
      result: { strategy: "tool", ok: false, error: { code: "tool_error" } },
      critic: null,
    });
    expect(h.state.data.next_action).toMatchObject({ kind: "retry" });
    const retry = h.answer("memory.update", bbOut.memory());
    expect(tasksOf(retry).map((t) => [(t.input as { strategy: string }).strategy, t.attempt])).toEqual([
      ["tool", 1],
      ["rag", 1],
      ["web", 1],
    ]);
    expect(h.state.data.step_retries).toBe(1);
  });
});

describe("FALLBACK: sequential strategies", () => {
  it("tries tool, then rag, then web, one at a time", () => {
    const h = harness("FALLBACK");
    expect(tasksOf(toExecution(h)).map((t) => (t.input as { strategy: string }).strategy)).toEqual(["tool"]);
    expect(
      tasksOf(h.answer("executor.execute:tool", bad("tool"))).map((t) => (t.input as { strategy: string }).strategy),
    ).toEqual(["rag"]);
    expect(awaitedKeys(h)).toEqual(["executor.execute:rag"]);
    expect(
      tasksOf(h.failTask("executor.execute:rag", failure("model_error", true))).map(
        (t) => (t.input as { query: string }).query,
      ),
    ).toEqual(["Use calculator for part 1"]);
    expect(awaitedKeys(h)).toEqual(["executor.execute:web"]);
    h.answer("executor.execute:web", good("web"));
    expect(h.state.data.step_outcome).toMatchObject({ strategy: "web", ok: true });
    expect(h.state.data.step_results.map((r) => [r.result.strategy, r.chosen])).toEqual([
      ["tool", false],
      ["rag", false],
      ["web", true],
    ]);
  });

  it("stops at the first success: no later strategy runs", () => {
    const h = harness("FALLBACK");
    toExecution(h);
    h.answer("executor.execute:tool", bad("tool"));
    h.answer("executor.execute:rag", good("rag"));
    expect(awaitedKeys(h)).toEqual(["perception.perceive"]);
    const sentStrategies = [...h.sent.values()].flatMap((t) =>
      t.op === "execute" ? [(t.input as { strategy: string }).strategy] : [],
    );
    expect(sentStrategies).toEqual(["tool", "rag"]);
  });

  it("runs only the tool when the tool succeeds", () => {
    const h = harness("FALLBACK");
    toExecution(h);
    h.answer("executor.execute:tool", good("tool"));
    expect(h.state.data.step_results.map((r) => r.result.strategy)).toEqual(["tool"]);
  });

  it("fails the step when all three fail, then rewrites when nothing was transient", () => {
    const h = harness("FALLBACK");
    toExecution(h);
    h.answer("executor.execute:tool", bad("tool", false));
    h.answer("executor.execute:rag", bad("rag", false));
    h.answer("executor.execute:web", bad("web", false));
    expect(h.state.data.phase).toBe("remember_step");
    expect(h.state.data.next_action).toMatchObject({
      kind: "rewrite",
      suggestion: expect.stringContaining("Running it again cannot help"),
    });
    const o = h.answer("memory.update", bbOut.memory());
    expect(tasksOf(o).map((t) => `${t.role}.${t.op}`)).toEqual(["decision.plan"]);
  });
});

describe("CONSERVATIVE: the tool only", () => {
  it("dispatches one tool task per step and never rag or web", () => {
    const h = harness("CONSERVATIVE");
    const o = toExecution(h);
    expect(tasksOf(o).map((t) => [(t.input as { strategy: string }).strategy, t.deadline_at])).toEqual([
      ["tool", h.now - 1000 + JOIN_DEADLINE_MS],
    ]);
    expect(awaitedKeys(h)).toEqual(["executor.execute:tool"]);
    h.answer("executor.execute:tool", bad("tool"));
    // No fallback: the step failed and memory hears about it.
    expect(awaitedKeys(h)).toEqual(["memory.update"]);
    expect(h.state.data.round).toMatchObject({
      mode: "tool_only",
      order: ["tool"],
      results: [{ strategy: "tool", ok: false }],
    });
  });

  it("treats an executor task failure as a failed strategy with its code and latency", () => {
    const h = harness("CONSERVATIVE");
    toExecution(h);
    h.failTask("executor.execute:tool", failure("sandbox_unavailable", false, "no isolation here"));
    const r = h.state.data.step_results[0]?.result as StepResult;
    expect(r).toMatchObject({
      strategy: "tool",
      tool: "calculator",
      ok: false,
      error: { code: "sandbox_unavailable", retryable: false },
      latency_ms: 1000,
    });
    expect(h.state.data.next_action).toMatchObject({ kind: "rewrite" });
  });
});
