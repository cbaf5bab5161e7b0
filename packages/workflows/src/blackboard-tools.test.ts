import { describe, expect, it } from "vitest";
import { LIMITS, type ExecutionStrategy, type SessionEvent } from "@agentmesh/contracts";
import { bbHarness, bbOut, drive, goodAgents, type BbHarness, type Script } from "./blackboard-testkit.js";
import { eventsOf, failure, recordEvents as record, resultFor } from "./testing.js";

type ToolCall = Extract<SessionEvent, { type: "tool_call" }>;
type ToolResult = Extract<SessionEvent, { type: "tool_result" }>;

const calls = (events: readonly SessionEvent[]) => events.filter((e): e is ToolCall => e.type === "tool_call");
const results = (events: readonly SessionEvent[]) => events.filter((e): e is ToolResult => e.type === "tool_result");

/** Every call has exactly one result, with its id and tool, after it; ids are unique. */
function expectMatched(events: readonly SessionEvent[]): void {
  const ids = calls(events).map((c) => c.id);
  expect(new Set(ids).size, "tool call ids are unique").toBe(ids.length);
  expect(
    results(events)
      .map((r) => r.id)
      .sort(),
  ).toEqual([...ids].sort());
  for (const call of calls(events)) {
    const at = events.indexOf(call);
    const result = results(events).find((r) => r.id === call.id);
    expect(result?.tool).toBe(call.tool);
    expect(events.indexOf(result as SessionEvent)).toBeGreaterThan(at);
  }
}

const TOOL: Record<ExecutionStrategy, string> = { tool: "calculator", rag: "corpus_search", web: "web_search" };

/** Start, perceive, list tools, remember, plan: the session is at its first plan step's round. */
function toExecution(h: BbHarness) {
  h.start();
  h.answer("perception.perceive", bbOut.perception());
  h.answer("executor.list_tools", bbOut.tools());
  h.answer("memory.update", bbOut.memory());
  return h.answer("decision.plan", bbOut.plan());
}

describe("tool_call and tool_result in a blackboard run", () => {
  it("a CONSERVATIVE run: one call per executor task, with the task's id and the step's arguments, each answered", () => {
    const h = bbHarness();
    const events = record(h);
    h.start();
    drive(h, goodAgents);
    expect(h.state.meta.status).toBe("completed");
    expect(calls(events).map((c) => [c.id, c.tool, c.args, c.args_truncated])).toEqual([
      ["p1.s0.r0.tool", "calculator", { expression: "2 + 2 * 3" }, false],
      ["p1.s1.r0.tool", "summarize", {}, false],
    ]);
    const executeTasks = [...h.sent.values()].filter((t) => t.op === "execute").map((t) => t.task_id);
    expect(calls(events).map((c) => c.task_id)).toEqual(executeTasks);
    expect(results(events).map((r) => [r.id, r.tool, r.ok, r.content, r.latency_ms])).toEqual([
      ["p1.s0.r0.tool", "calculator", true, "8", 7],
      ["p1.s1.r0.tool", "summarize", true, "2 + 2 * 3 = 8", 7],
    ]);
    expectMatched(events);
    // Each call follows the executor stage that dispatched it.
    const first = events.indexOf(calls(events)[0] as SessionEvent);
    expect(events[first - 1]).toMatchObject({ type: "stage", name: "executor", status: "running" });
  });

  it("a result's content is a preview of at most 500 characters", () => {
    const h = bbHarness();
    const events = record(h);
    toExecution(h);
    const long = `${"a".repeat(600)}${"b".repeat(3000)}`;
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", long));
    const [r] = results(events);
    expect(r?.content).toHaveLength(LIMITS.toolResultPreviewChars);
    expect(r?.content).toBe(`${"a".repeat(499)}…`);
  });

  it("a failed tool, a failed executor task and a missed deadline are failed results with the error as content", () => {
    const h = bbHarness({ profile: "FALLBACK" });
    const events = record(h);
    toExecution(h);
    const o = h.answer("executor.execute:tool", bbOut.fail("tool", "calculator", "tool_error", true));
    // The failure's result comes before the next strategy's call, in the same transition.
    expect(
      eventsOf(o)
        .filter((e) => e.type === "tool_result" || e.type === "tool_call")
        .map((e) => `${e.type} ${e.id}`),
    ).toEqual(["tool_result p1.s0.r0.tool", "tool_call p1.s0.r0.rag"]);
    h.failTask("executor.execute:rag", failure("unavailable", true, "no executor answered"));
    h.deadline("executor.execute:web");
    expect(results(events).map((r) => [r.id, r.tool, r.ok, r.content])).toEqual([
      ["p1.s0.r0.tool", "calculator", false, "tool_error: tool_error happened"],
      ["p1.s0.r0.rag", "corpus_search", false, "unavailable: no executor answered"],
      ["p1.s0.r0.web", "web_search", false, expect.stringMatching(/^deadline_exceeded: task .* passed its deadline$/)],
    ]);
    expect(calls(events).find((c) => c.id === "p1.s0.r0.rag")?.args).toEqual({ query: "Use calculator for part 1" });
    expectMatched(events);
  });

  it("EXPLORATORY: strategies the join deadline abandons get a failed result too, and a late result adds nothing", () => {
    const h = bbHarness({ profile: "EXPLORATORY" });
    const events = record(h);
    toExecution(h);
    expect(calls(events).map((c) => [c.id, c.tool])).toEqual([
      ["p1.s0.r0.tool", "calculator"],
      ["p1.s0.r0.rag", "corpus_search"],
      ["p1.s0.r0.web", "web_search"],
    ]);
    h.answer("executor.execute:tool", bbOut.ok("tool", TOOL.tool, "8"));
    const rag = h.task("executor.execute:rag");
    h.deadline("executor.execute:web");
    expect(results(events).map((r) => [r.id, r.ok, r.content])).toEqual([
      ["p1.s0.r0.tool", true, "8"],
      ["p1.s0.r0.web", false, expect.stringMatching(/^deadline_exceeded: /)],
      ["p1.s0.r0.rag", false, "deadline_exceeded: abandoned at the join deadline"],
    ]);
    expectMatched(events);
    const before = events.length;
    expect(h.send(resultFor(rag, bbOut.ok("rag", TOOL.rag, "late")))).toMatchObject({
      kind: "drop",
      reason: "not_awaited",
    });
    expect(events).toHaveLength(before);
  });

  it("the executor task carries the session's tool policy: the tools the planner was shown and the banned ones", () => {
    const h = bbHarness();
    h.start();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", {
      ...bbOut.memory(),
      banned_tools: [{ tool: "web_search", reason: "tool_unavailable: no provider" }],
    });
    h.answer("decision.plan", bbOut.plan());
    expect(h.input(h.task("executor.execute:tool"))).toMatchObject({
      policy: { listed: ["calculator", "corpus_search", "web_search"], banned: ["web_search"] },
    });
  });

  it("dangerous-pattern flags: tool_call from the dispatched arguments, tool_result from the executor's records", () => {
    const h = bbHarness();
    const events = record(h);
    h.start();
    h.answer("perception.perceive", bbOut.perception());
    h.answer("executor.list_tools", bbOut.tools());
    h.answer("memory.update", bbOut.memory());
    const plan = bbOut.plan();
    const first = plan.steps[0];
    if (!first) throw new Error("the test plan has a first step");
    h.answer("decision.plan", {
      ...plan,
      steps: [
        { ...first, args: [{ name: "expression", value: "import os; os.system('rm -rf /')" }] },
        ...plan.steps.slice(1),
      ],
    });
    expect(calls(events)[0]?.flags).toEqual(["import", "rm_rf", "subprocess"]);
    const flagged = bbOut.ok("tool", "calculator", "8", {
      records: [
        {
          tool: "calculator",
          args_digest: null,
          latency_ms: 7,
          outcome: "ok",
          attempt: 1,
          flags: ["import", "rm_rf", "subprocess"],
        },
      ],
    });
    h.answer("executor.execute:tool", flagged);
    expect(results(events)[0]?.flags).toEqual(["import", "rm_rf", "subprocess"]);
    // a clean call carries no flags field at all
    drive(h, goodAgents);
    expect(calls(events).at(-1)).not.toHaveProperty("flags");
    expect(results(events).at(-1)).not.toHaveProperty("flags");
  });

  it("retries and rewrites give new ids: every call of a long run is answered once", () => {
    const rejecting: Script = (task, input, data) =>
      task.role === "critic" ? { output: bbOut.report(false) } : goodAgents(task, input, data);
    const h = bbHarness();
    const events = record(h);
    h.start();
    drive(h, rejecting);
    expect(h.state.meta.status).toBe("completed");
    // CONSERVATIVE: the first run and 2 retries, a rewrite, then its run and 2 retries.
    expect(calls(events).map((c) => c.id)).toEqual([
      "p1.s0.r0.tool",
      "p1.s0.r1.tool",
      "p1.s0.r2.tool",
      "p2.s0.r0.tool",
      "p2.s0.r1.tool",
      "p2.s0.r2.tool",
    ]);
    expectMatched(events);
  });
});
