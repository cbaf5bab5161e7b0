import { describe, expect, test } from "vitest";
import { testSessionState } from "@agentmesh/session-store/testing";
import type { SessionState } from "@agentmesh/contracts";
import { deadInboxBySession, stuckReason } from "./commands.js";

const T = 1_700_000_000_000;
const with_ = (patch: Partial<SessionState["meta"]>): SessionState => {
  const s = testSessionState("stucktest0000001", 3, T);
  return { ...s, meta: { ...s.meta, ...patch } };
};
const task = (deadline_at: number | null) => ({
  task_id: "stucktest0000001.3.0.0",
  role: "planner",
  op: "plan",
  attempt: 0,
  dispatched_at: T,
  deadline_at,
});

describe("agentmesh sessions --stuck", () => {
  test("a live session past its deadline plus grace is stuck; within grace it is not", () => {
    const s = with_({ status: "running", deadline_at: T + 1000 });
    expect(stuckReason(s, T + 1000 + 60_000, 60_000)).toBeNull();
    expect(stuckReason(s, T + 1000 + 60_001, 60_000)).toMatch(/session deadline passed/);
  });

  test("an awaited task past its deadline plus grace is stuck", () => {
    const s = with_({ status: "running", deadline_at: null, awaiting: [task(T + 500)] });
    expect(stuckReason(s, T + 500 + 1001, 1000)).toMatch(/planner\.plan .* past its deadline/);
    expect(
      stuckReason(with_({ status: "running", deadline_at: null, awaiting: [task(null)] }), T + 10 ** 9, 1000),
    ).toBeNull();
  });

  test("a paused session past its expiry plus grace is stuck (its expiry timer was lost)", () => {
    const s = with_({
      status: "awaiting_user",
      deadline_at: null,
      pause: { since: T, deadline_left_ms: null, expires_at: T + 5000 },
    });
    expect(stuckReason(s, T + 5000 + 1000, 1000)).toBeNull();
    expect(stuckReason(s, T + 5000 + 1001, 1000)).toMatch(/waiting for a person \d+ s past the pause's expiry/);
    expect(
      stuckReason(
        with_({
          status: "awaiting_user",
          deadline_at: null,
          pause: { since: T, deadline_left_ms: null, expires_at: null },
        }),
        T + 10 ** 9,
        0,
      ),
    ).toBeNull();
  });

  test("a finished session is never stuck, whatever its deadlines say", () => {
    for (const status of ["completed", "failed", "cancelled", "budget_exceeded"] as const) {
      expect(stuckReason(with_({ status, deadline_at: T, awaiting: [task(T)] }), T + 10 ** 9, 0)).toBeNull();
    }
  });

  test("a live session with a dead-lettered inbox input is stuck at once; a finished one is not", () => {
    const s = with_({ status: "running", deadline_at: null });
    expect(stuckReason(s, T, 60_000)).toBeNull();
    expect(stuckReason(s, T, 60_000, [7, 9])).toBe(
      "2 inbox input(s) dead-lettered (re-drive: agentmesh dead-letters --redrive 7 9)",
    );
    expect(stuckReason(with_({ status: "completed" }), T, 60_000, [7])).toBeNull();
  });

  test("dead letters are grouped by session; task dead letters and unknown sessions are left out", () => {
    const d = (seq: number, kind: "task" | "inbox", sessionId: string | null) => ({
      seq,
      kind,
      sessionId,
      subject: "",
      originalSubject: "",
      originalSeq: 0,
      deliveries: 1,
      taskId: null,
      reason: null,
      at: "",
    });
    const m = deadInboxBySession([
      d(1, "inbox", "a"),
      d(2, "task", "a"),
      d(3, "inbox", "b"),
      d(4, "inbox", "a"),
      d(5, "inbox", null),
    ]);
    expect([...m.entries()]).toEqual([
      ["a", [1, 4]],
      ["b", [3]],
    ]);
  });
});
