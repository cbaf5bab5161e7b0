import { describe, expect, it } from "vitest";
import { JOIN_DEADLINE_MS } from "./blackboard-tasks.js";
import { bbHarness, bbOut, keyOf } from "./blackboard-testkit.js";
import { DEFAULTS, tasksOf } from "./testing.js";

/** Generic runtime extensions the blackboard needs: task tags, per-task deadlines, abandoning a fan-out. */
function toRound(h: ReturnType<typeof bbHarness>) {
  h.start();
  h.answer("perception.perceive", bbOut.perception());
  h.answer("executor.list_tools", bbOut.tools());
  h.answer("memory.update", bbOut.memory());
  return h.answer("decision.plan", bbOut.plan());
}

describe("runtime: per-task deadlines and tags", () => {
  it("keeps a task's own deadline when it is shorter than the runtime default, and the tag with the awaited task", () => {
    const h = bbHarness({ profile: "EXPLORATORY" });
    const o = toRound(h);
    const at = h.now - 1000;
    expect(tasksOf(o).map((t) => t.deadline_at)).toEqual([
      at + JOIN_DEADLINE_MS,
      at + JOIN_DEADLINE_MS,
      at + JOIN_DEADLINE_MS,
    ]);
    expect(o.timers.map((t) => t.dueAt)).toEqual([at + JOIN_DEADLINE_MS, at + JOIN_DEADLINE_MS, at + JOIN_DEADLINE_MS]);
    expect(h.state.meta.awaiting.map((a) => a.tag)).toEqual(["tool", "rag", "web"]);
    // Untagged tasks carry no tag at all.
    expect(
      Object.hasOwn(tasksOf(h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8")))[0] ?? {}, "tag"),
    ).toBe(false);
  });

  it("caps a task's own deadline at the runtime default", () => {
    const h = bbHarness({ defaults: { ...DEFAULTS, taskDeadlineMs: 8000 } });
    const o = toRound(h);
    expect(tasksOf(o)[0]?.deadline_at).toBe(h.now - 1000 + 8000);
  });

  it("uses a task's own deadline when the runtime has none", () => {
    const h = bbHarness({ defaults: { ...DEFAULTS, taskDeadlineMs: null } });
    const o = toRound(h);
    expect(tasksOf(o)[0]?.deadline_at).toBe(h.now - 1000 + JOIN_DEADLINE_MS);
    expect(h.state.meta.awaiting.map(keyOf)).toEqual(["executor.execute:tool"]);
    h.answer("executor.execute:tool", bbOut.ok("tool", "calculator", "8"));
    expect(h.state.meta.awaiting.map((a) => a.deadline_at)).toEqual([null]);
  });
});
