import { describe, expect, it } from "vitest";
import type { SessionStatus } from "@agentmesh/contracts";
import { createLocalSessionStore, testSessionState } from "@agentmesh/session-store/testing";
import { liveSession, startedAfter } from "./sessions.js";

const store = () =>
  createLocalSessionStore({
    keyPrefix: "gwtest",
    activeTtlMs: 60_000,
    finishedTtlMs: 60_000,
    idempotencyTtlMs: 60_000,
  });

async function withStatus(status: SessionStatus) {
  const s = store();
  const state = testSessionState(`gwlive${status.replace(/_/g, "")}000000`, 1);
  await s.create({ ...state, meta: { ...state.meta, status } });
  return liveSession(s)(state.meta.session_id);
}

describe("liveSession: whether a session still holds its concurrency slot", () => {
  it("holds while running; not while it waits for a person, nor once it has ended", async () => {
    expect(await withStatus("running")).toBe(true);
    expect(await withStatus("awaiting_user")).toBe(false);
    for (const ended of ["completed", "failed", "cancelled", "budget_exceeded"] as const)
      expect(await withStatus(ended), ended).toBe(false);
  });

  it("holds for a session not in the store yet: another replica is submitting it, and its slot must not be taken", async () => {
    expect(await liveSession(store())("gwsubmitting00000001")).toBe(true);
  });
});

describe("where a just-started session's stream replays from", () => {
  const started = (created: boolean, replied: boolean) => ({
    sessionId: "gwstarted0000001",
    threadId: "thread-0001",
    created,
    replied,
    after: null,
  });
  it("past the hub's position for a session this request created or answered; from the start for a retried one", () => {
    expect(startedAfter(started(true, false), 41)).toBe(42);
    expect(startedAfter(started(false, true), 41)).toBe(42);
    expect(startedAfter(started(false, false), 41)).toBeUndefined();
  });
});
