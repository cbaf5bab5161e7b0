import { describe, expect, test } from "vitest";
import { createTokenDedup, decodeEvents, type TokenDelta } from "./events.js";

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

/** A token delta of a task, with the fields the de-duplication reads. */
function tok(task_id: string, f: { seq?: number; offset?: number; delta?: string }): TokenDelta {
  return {
    v: 1,
    type: "token",
    session_id: "s",
    version: 1,
    index: 0,
    timestamp: 0,
    task_id,
    delta: f.delta ?? "x",
    ...(f.seq === undefined ? {} : { seq: f.seq }),
    ...(f.offset === undefined ? {} : { offset: f.offset }),
  };
}

describe("createTokenDedup by seq (publishers without offsets): each (task_id, seq) once", () => {
  const ok = (d: ReturnType<typeof createTokenDedup>, t: TokenDelta) => d.admit(t) !== null;

  test("a redelivered task's text from seq 0 again is dropped up to what was shown, then goes on", () => {
    const d = createTokenDedup();
    const seen = [0, 1, 2, 0, 1, 2, 3].map((seq) => ok(d, tok("s.1.0.0", { seq })));
    expect(seen).toEqual([true, true, true, false, false, false, true]);
  });

  test("tasks are counted apart; a gap (a lost delta) does not stop what follows; no seq is always shown", () => {
    const d = createTokenDedup();
    expect(ok(d, tok("s.1.0.0", { seq: 0 }))).toBe(true);
    expect(ok(d, tok("s.1.1.0", { seq: 0 }))).toBe(true);
    expect(ok(d, tok("s.1.0.0", { seq: 3 }))).toBe(true);
    expect(ok(d, tok("s.1.0.0", { seq: 2 }))).toBe(false);
    expect(ok(d, tok("s.1.0.0", {}))).toBe(true);
    expect(ok(d, tok("s.1.0.0", {}))).toBe(true);
  });

  test("a workflow retry is another task id (another attempt): its text is shown", () => {
    const d = createTokenDedup();
    expect(ok(d, tok("s.1.0.0", { seq: 0 }))).toBe(true);
    expect(ok(d, tok("s.1.0.1", { seq: 0 }))).toBe(true);
  });
});

describe("createTokenDedup by offset: each character of a task's text once, however a run cut it", () => {
  const shown = (d: ReturnType<typeof createTokenDedup>, ts: TokenDelta[]) => ts.map((t) => d.admit(t)?.delta ?? null);

  test("a redelivered task cutting the same text elsewhere shows only the characters past what was shown", () => {
    const d = createTokenDedup();
    const first = [tok("s.1.0.0", { offset: 0, delta: "Hello, " }), tok("s.1.0.0", { offset: 7, delta: "wor" })];
    const again = [
      tok("s.1.0.0", { offset: 0, delta: "Hel" }),
      tok("s.1.0.0", { offset: 3, delta: "lo, wo" }),
      tok("s.1.0.0", { offset: 9, delta: "rld!" }),
      tok("s.1.0.0", { offset: 13, delta: " Bye." }),
    ];
    expect(shown(d, first)).toEqual(["Hello, ", "wor"]);
    expect(shown(d, again)).toEqual([null, null, "ld!", " Bye."]);
    const t = d.admit(tok("s.1.0.0", { offset: 15, delta: "ye. More" }));
    expect(t).toMatchObject({ offset: 18, delta: " More" });
  });

  test("a delta past a gap is shown whole; tasks are apart; a delta with nothing new is dropped", () => {
    const d = createTokenDedup();
    expect(shown(d, [tok("a", { offset: 0, delta: "ab" }), tok("a", { offset: 5, delta: "fg" })])).toEqual([
      "ab",
      "fg",
    ]);
    expect(shown(d, [tok("a", { offset: 2, delta: "cde" }), tok("b", { offset: 0, delta: "ab" })])).toEqual([
      null,
      "ab",
    ]);
    expect(shown(d, [tok("b", { offset: 2, delta: "" })])).toEqual([null]);
  });
});
