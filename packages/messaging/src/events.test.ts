import { describe, expect, test } from "vitest";
import { createTokenDedup, decodeEvents } from "./events.js";

const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const SID = "sess_legacy_0001";
const stage = (index: number, time: Record<string, number>) => ({
  v: 1,
  session_id: SID,
  version: 4,
  index,
  ...time,
  type: "stage",
  name: "planner",
  description: "planning",
  status: "running",
});

describe("decodeEvents: events stamped `timestamp`, and the previous release's `at` read for one release", () => {
  test("a batch stored by the previous release (every event with `at`) reads as `timestamp`, the value unchanged", () => {
    const old = {
      v: 1,
      session_id: SID,
      version: 4,
      events: [stage(0, { at: 1_700_000_000_001 }), stage(1, { at: 1_700_000_000_002 })],
    };
    const d = decodeEvents(bytes(old));
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.value.skipped).toEqual([]);
    expect(d.value.events.map((e) => e.timestamp)).toEqual([1_700_000_000_001, 1_700_000_000_002]);
    for (const e of d.value.events) expect(e).not.toHaveProperty("at");
  });

  test("a bare event of the previous release reads the same way", () => {
    const d = decodeEvents(bytes(stage(0, { at: 7 })));
    expect(d.ok && d.value.events[0]).toMatchObject({ timestamp: 7, type: "stage" });
    expect(d.ok && d.value.events[0]).not.toHaveProperty("at");
  });

  test("a current event keeps its `timestamp`; an event with neither name is skipped, naming the field", () => {
    const d = decodeEvents(
      bytes({ v: 1, session_id: SID, version: 4, events: [stage(0, { timestamp: 9 }), stage(1, {})] }),
    );
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.value.events.map((e) => e.timestamp)).toEqual([9]);
    expect(d.value.skipped).toHaveLength(1);
    expect(d.value.skipped[0]).toMatch(/timestamp/);
  });

  test("an event with both names is read by `timestamp` alone (a stray `at` is not a second name for it)", () => {
    const d = decodeEvents(bytes(stage(0, { timestamp: 5, at: 6 })));
    expect(d.ok && d.value.events[0]?.timestamp).toBe(5);
    expect(d.ok && d.value.events[0]).not.toHaveProperty("at");
  });
});

describe("createTokenDedup: each (task_id, seq) once", () => {
  test("a redelivered task's text from seq 0 again is dropped up to what was shown, then goes on", () => {
    const d = createTokenDedup();
    const seen = [0, 1, 2, 0, 1, 2, 3].map((seq) => d.accept({ task_id: "s.1.0.0", seq }));
    expect(seen).toEqual([true, true, true, false, false, false, true]);
  });

  test("tasks are counted apart; a gap (a lost delta) does not stop what follows; no seq is always shown", () => {
    const d = createTokenDedup();
    expect(d.accept({ task_id: "s.1.0.0", seq: 0 })).toBe(true);
    expect(d.accept({ task_id: "s.1.1.0", seq: 0 })).toBe(true);
    expect(d.accept({ task_id: "s.1.0.0", seq: 3 })).toBe(true);
    expect(d.accept({ task_id: "s.1.0.0", seq: 2 })).toBe(false);
    expect(d.accept({ task_id: "s.1.0.0" })).toBe(true);
    expect(d.accept({ task_id: "s.1.0.0" })).toBe(true);
  });

  test("a workflow retry is another task id (another attempt): its text is shown", () => {
    const d = createTokenDedup();
    expect(d.accept({ task_id: "s.1.0.0", seq: 0 })).toBe(true);
    expect(d.accept({ task_id: "s.1.0.1", seq: 0 })).toBe(true);
  });
});
