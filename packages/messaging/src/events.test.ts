import { describe, expect, test } from "vitest";
import { createTokenDedup } from "./events.js";

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
