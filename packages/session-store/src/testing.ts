import { describe, expect, it } from "vitest";
import { AgentmeshError, LIMITS, type SessionState } from "@agentmesh/contracts";
import { testCommit, testSessionState } from "./fixtures.js";
import type { SessionStore, SessionStoreOptions } from "./types.js";

export { testCommit, testSessionState, type TestCommitOptions } from "./fixtures.js";
export { createLocalSessionStore, type LocalSessionStoreOptions } from "./local.js";

/** The options the suite asks a factory for; the factory picks the key prefix (unique per call). */
export type SessionStoreTestOptions = Required<Omit<SessionStoreOptions, "keyPrefix">>;

/** What a factory hands the suite: a fresh, empty session store, and optionally a way to move its clock. */
export interface SessionStoreHarness {
  readonly store: SessionStore;
  /** Moves the session store's clock forward; without it the suite waits in real time. */
  readonly advance?: (ms: number) => Promise<void> | void;
  cleanup(): Promise<void>;
}

/** Builds a fresh session store honouring `opts` (TTLs, log cap) with an isolated key space. */
export type SessionStoreFactory = (opts: SessionStoreTestOptions) => Promise<SessionStoreHarness>;

const ACTIVE = 60_000;
const FINISHED = 10_000; // below ACTIVE, so a terminal TTL is distinguishable from a refreshed active one
const LEASE = 60_000;
const DEFAULTS: SessionStoreTestOptions = {
  activeTtlMs: ACTIVE,
  finishedTtlMs: FINISHED,
  idempotencyTtlMs: 30_000,
  transitionLogCap: 1000,
  transitionLogMaxBytes: LIMITS.transitionLogMaxBytes,
  timerLeaseMs: LEASE,
  longTermRefsMax: 20,
  longTermRefsTtlMs: 60_000,
};
const SID = "sess-conformance-1";
const OTHER = "sess-conformance-2";

/** What every case of the suite is run with: a fresh harness per case, and shared checks. */
interface SuiteHelpers {
  /** Runs `body` against a fresh harness and always cleans up. */
  withHarness(body: (h: SessionStoreHarness) => Promise<void>, over?: Partial<SessionStoreTestOptions>): Promise<void>;
  /** Moves the harness's clock, or waits in real time when it has none. */
  wait(h: SessionStoreHarness, ms: number): Promise<void>;
  /** Creates a test session (SID unless named), expecting the create to succeed. */
  created(store: SessionStore, sid?: string): Promise<SessionState>;
  /** Expects no key of the session and no listing of it. */
  expectAbsent(store: SessionStore, sid: string): Promise<void>;
}

/** The suite's helpers over one factory. */
function suiteHelpers(factory: SessionStoreFactory): SuiteHelpers {
  /** Runs `body` against a fresh harness and always cleans up. */
  async function withHarness(
    body: (h: SessionStoreHarness) => Promise<void>,
    over: Partial<SessionStoreTestOptions> = {},
  ): Promise<void> {
    const h = await factory({ ...DEFAULTS, ...over });
    try {
      await body(h);
    } finally {
      await h.cleanup();
    }
  }
  const wait = async (h: SessionStoreHarness, ms: number) =>
    h.advance ? h.advance(ms) : new Promise<void>((r) => setTimeout(r, ms));
  const created = async (store: SessionStore, sid = SID): Promise<SessionState> => {
    const s = testSessionState(sid);
    expect(await store.create(s)).toBe(true);
    return s;
  };
  const expectAbsent = async (store: SessionStore, sid: string) => {
    expect(Object.values(await store.ttls(sid)).every((t) => t === -2)).toBe(true);
    expect(await store.listSessions(100)).not.toContain(sid);
  };

  return { withHarness, wait, created, expectAbsent };
}

/**
 * The session store contract, run against every implementation (Redis adapter and local twin),
 * so the twin cannot drift from the real store the coordinator relies on.
 */
export function runSessionStoreConformance(name: string, factory: SessionStoreFactory): void {
  const h = suiteHelpers(factory);
  describe(`session-store conformance: ${name}`, () => {
    createAndCommitCases(h);
    commitRefusalAndLogCapCases(h);
    sizeIdempotencyAndTimerCases(h);
    timerRaceListAndTtlCases(h);
    idempotencyTtlAndThreadCases(h);
    threadAndRaceCases(h);
    threadRefsCases(h);
  });
}

/** Creating, loading and committing a session, and the commit's compare-and-set. */
function createAndCommitCases({ withHarness, created, expectAbsent }: SuiteHelpers): void {
  it("creates a session and loads it back", () =>
    withHarness(async ({ store }) => {
      const s = await created(store);
      expect(await store.load(SID)).toEqual({ state: s, outbox: null });
      expect(await store.isApplied(SID, "start:x")).toBe(false);
      const t = await store.ttls(SID);
      expect(t.state).toBeGreaterThan(0);
      expect(t.state).toBeLessThanOrEqual(ACTIVE);
      expect([t.applied, t.log]).toEqual([-2, -2]);
      expect(await store.listSessions(10)).toEqual([SID]);
    }));

  it("does not overwrite an existing session on a second create", () =>
    withHarness(async ({ store }) => {
      const s = await created(store);
      const other = testSessionState(SID, 0, 5);
      other.data.question = "A different question entirely?";
      expect(await store.create(other)).toBe(false);
      expect((await store.load(SID))?.state).toEqual(s);
    }));

  it("loads an unknown session as null without creating a key", () =>
    withHarness(async ({ store }) => {
      expect(await store.load(OTHER)).toBeNull();
      expect(await store.transitionLog(OTHER)).toEqual([]);
      expect(await store.isApplied(OTHER, "x")).toBe(false);
      await expectAbsent(store, OTHER);
    }));

  it("commits a transition: version, state, outbox, applied marker and log line", () =>
    withHarness(async ({ store }) => {
      const req = testCommit(await created(store), "start:a");
      expect(await store.commit(req)).toEqual({ ok: true });
      expect(await store.load(SID)).toEqual({ state: req.state, outbox: req.outbox });
      expect(await store.isApplied(SID, "start:a")).toBe(true);
      expect(await store.transitionLog(SID)).toEqual([req.log]);
    }));

  it("loads a session for an input in one read: state, pending outbox, and whether the input was applied", () =>
    withHarness(async ({ store }) => {
      expect(await store.loadForInput(SID, "start:a")).toBeNull();
      const s = await created(store);
      expect(await store.loadForInput(SID, "start:a")).toEqual({ state: s, outbox: null, applied: false });
      const req = testCommit(s, "start:a");
      expect(await store.commit(req)).toEqual({ ok: true });
      expect(await store.loadForInput(SID, "start:a")).toEqual({
        state: req.state,
        outbox: req.outbox,
        applied: true,
      });
      expect(await store.loadForInput(SID, "in:b")).toEqual({ state: req.state, outbox: req.outbox, applied: false });
      await store.clearOutbox(SID, req.outbox.version);
      expect(await store.loadForInput(SID, "in:b")).toEqual({ state: req.state, outbox: null, applied: false });
      // agrees with the two separate reads it replaces
      expect(await store.load(SID)).toEqual({ state: req.state, outbox: null });
      expect(await store.isApplied(SID, "start:a")).toBe(true);
    }));

  it("lets exactly one of two commits from the same version win", () =>
    withHarness(async ({ store }) => {
      const s = await created(store);
      const rs = await Promise.all([store.commit(testCommit(s, "in:a")), store.commit(testCommit(s, "in:b"))]);
      expect(rs.filter((r) => r.ok)).toHaveLength(1);
      expect(rs.filter((r) => !r.ok)).toEqual([{ ok: false, reason: "conflict", currentVersion: 1 }]);
      const winner = rs[0]?.ok ? "in:a" : "in:b";
      expect((await store.transitionLog(SID)).map((l) => l.input_id)).toEqual([winner]);
      expect(await store.isApplied(SID, winner === "in:a" ? "in:b" : "in:a")).toBe(false);
    }));

  it("reports an applied input as already_applied, before comparing versions", () =>
    withHarness(async ({ store }) => {
      const s0 = await created(store);
      const c1 = testCommit(s0, "in:a");
      expect(await store.commit(c1)).toEqual({ ok: true });
      expect(await store.commit(testCommit(c1.state, "in:a"))).toEqual({ ok: false, reason: "already_applied" });
      expect(await store.commit(testCommit(s0, "in:a"))).toEqual({ ok: false, reason: "already_applied" });
      expect((await store.load(SID))?.state.meta.version).toBe(1);
    }));
}

/** Commits that write nothing, clearing the outbox, and the transition log's caps. */
function commitRefusalAndLogCapCases({ withHarness, created, expectAbsent }: SuiteHelpers): void {
  it("answers missing for a commit to an unknown session and creates no key", () =>
    withHarness(async ({ store }) => {
      const req = testCommit(testSessionState(OTHER), "in:a", { timers: [{ member: "t-missing", dueAt: 1 }] });
      expect(await store.commit(req)).toEqual({ ok: false, reason: "missing" });
      await expectAbsent(store, OTHER);
      expect(await store.claimDueTimers(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    }));

  it("rejects a commit whose state version is not expectedVersion + 1, writing nothing", () =>
    withHarness(async ({ store }) => {
      const req = testCommit(await created(store), "in:a");
      await expect(store.commit({ ...req, expectedVersion: 1 })).rejects.toThrow(/version/);
      expect((await store.load(SID))?.state.meta.version).toBe(0);
    }));

  it("clears the outbox only when it is still the one written at that version", () =>
    withHarness(async ({ store }) => {
      const c1 = testCommit(await created(store), "in:a");
      await store.commit(c1);
      await store.clearOutbox(SID, 2);
      expect((await store.load(SID))?.outbox).toEqual(c1.outbox);
      await store.clearOutbox(SID, 1);
      expect((await store.load(SID))?.outbox).toBeNull();
      const c2 = testCommit(c1.state, "in:b");
      await store.commit(c2);
      await store.clearOutbox(SID, 1); // a slow publisher of version 1 must not clear version 2's outbox
      expect(await store.load(SID)).toEqual({ state: c2.state, outbox: c2.outbox });
      await store.clearOutbox(OTHER, 1);
      await expectAbsent(store, OTHER);
    }));

  it("caps the transition log by lines, keeping the first line and the newest, oldest first", () =>
    withHarness(
      async ({ store }) => {
        let s = await created(store);
        for (let i = 1; i <= 8; i++) {
          const c = testCommit(s, `in:${i}`);
          expect(await store.commit(c)).toEqual({ ok: true });
          s = c.state;
        }
        expect((await store.transitionLog(SID)).map((l) => l.version)).toEqual([1, 5, 6, 7, 8]);
      },
      { transitionLogCap: 5 },
    ));

  it("caps the transition log by bytes, keeping the first line and the newest that fit", () => {
    const cap = 1200;
    return withHarness(
      async ({ store }) => {
        let s = await created(store);
        for (let i = 1; i <= 30; i++) {
          const c = testCommit(s, `in:${i}`);
          expect(await store.commit(c)).toEqual({ ok: true });
          s = c.state;
        }
        const log = await store.transitionLog(SID);
        const versions = log.map((l) => l.version);
        expect(versions[0]).toBe(1);
        expect(versions.at(-1)).toBe(30);
        expect(versions.slice(1)).toEqual(
          Array.from({ length: versions.length - 1 }, (_, i) => 31 - versions.length + 1 + i),
        );
        expect(log.length).toBeGreaterThan(2);
        expect(log.length).toBeLessThan(30);
        const bytes = log.reduce((n, l) => n + Buffer.byteLength(JSON.stringify(l)), 0);
        expect(bytes).toBeLessThanOrEqual(cap);
        // One more line would not have fitted.
        const next = Buffer.byteLength(JSON.stringify(testCommit(s, "in:x").log));
        expect(bytes + next + 4).toBeGreaterThan(cap); // lines differ by a few bytes (in:9, in:10)
      },
      { transitionLogMaxBytes: cap },
    );
  });
}

/** The state size limit, the idempotency claim, and timers set, moved, claimed and leased. */
function sizeIdempotencyAndTimerCases({ withHarness, created, expectAbsent }: SuiteHelpers): void {
  it("refuses to store a state over LIMITS.maxStateBytes, writing nothing", () =>
    withHarness(async ({ store }) => {
      const s = await created(store);
      const c = testCommit(s, "in:big");
      // Valid by the schema (20 results of 20,000 characters) but 3 bytes a character: over 1 MiB of JSON.
      if (c.state.data.workflow !== "critic-chain") throw new Error("fixture is critic-chain");
      c.state.data.research_results = Array.from({ length: LIMITS.maxListItems }, () =>
        "€".repeat(LIMITS.maxTextChars),
      );
      const err = await store.commit(c).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AgentmeshError);
      expect((err as AgentmeshError).code).toBe("payload_too_large");
      expect(await store.load(SID)).toEqual({ state: s, outbox: null });
      expect(await store.transitionLog(SID)).toEqual([]);
      const fresh = testSessionState(OTHER);
      if (fresh.data.workflow === "critic-chain") fresh.data.research_results = c.state.data.research_results;
      await expect(store.create(fresh)).rejects.toThrow(/over 1048576/);
      await expectAbsent(store, OTHER);
    }));

  it("gives an idempotency key to its first claimer", () =>
    withHarness(async ({ store }) => {
      expect(await store.claimIdempotencyKey("client-key-1", SID)).toBe(SID);
      expect(await store.claimIdempotencyKey("client-key-1", OTHER)).toBe(SID);
      expect(await store.claimIdempotencyKey("client-key-2", OTHER)).toBe(OTHER);
      const racers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.claimIdempotencyKey("client-key-3", `sess-racer-${i}`)),
      );
      expect(new Set(racers).size).toBe(1);
    }));

  it("adds, moves and clears timers through commits and pops due ones earliest first", () =>
    withHarness(async ({ store }) => {
      const s = await created(store);
      const c1 = testCommit(s, "in:a", {
        timers: [
          { member: "t-b", dueAt: 200 },
          { member: "t-a", dueAt: 100 },
          { member: "t-c", dueAt: 300 },
        ],
      });
      await store.commit(c1);
      expect(await store.claimDueTimers(99, 10)).toEqual([]);
      expect(await store.claimDueTimers(100, 10)).toEqual(["t-a"]);
      expect(await store.claimDueTimers(150, 10)).toEqual([]);
      await store.commit(
        testCommit(c1.state, "in:b", { timers: [{ member: "t-b", dueAt: 1000 }], clearTimers: ["t-c"] }),
      );
      expect(await store.claimDueTimers(999, 10)).toEqual([]);
      expect(await store.claimDueTimers(5000, 10)).toEqual(["t-b"]);
      expect(await store.claimDueTimers(5000, 10)).toEqual([]);
    }));

  it("a claimed timer comes due again after its lease unless a commit clears it (claimer crashed)", () =>
    withHarness(async ({ store }) => {
      const s = await created(store);
      const c1 = testCommit(s, "in:a", {
        timers: [
          { member: "t-x", dueAt: 100 },
          { member: "t-y", dueAt: 100 },
        ],
      });
      await store.commit(c1);
      expect(await store.claimDueTimers(100, 10)).toEqual(["t-x", "t-y"]);
      expect(await store.claimDueTimers(100 + LEASE - 1, 10)).toEqual([]);
      await store.commit(testCommit(c1.state, "in:b", { clearTimers: ["t-x"] }));
      expect(await store.claimDueTimers(100 + LEASE, 10)).toEqual(["t-y"]);
      await store.removeTimers(["t-y"]);
      expect(await store.claimDueTimers(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    }));
}

/** Racing timer claimers, listing sessions, and the keys' TTLs. */
function timerRaceListAndTtlCases({ withHarness, wait, created, expectAbsent }: SuiteHelpers): void {
  it("hands each due timer to exactly one of 20 concurrent claimers", () =>
    withHarness(async ({ store }) => {
      const timers = Array.from({ length: 60 }, (_, i) => ({ member: `t-${i}`, dueAt: 1000 + i }));
      await store.commit(
        testCommit(await created(store), "in:a", { timers: [...timers, { member: "t-later", dueAt: 10_000 }] }),
      );
      const claimer = async () => {
        const got: string[] = [];
        // Bounded, so an implementation that never removes claimed timers fails instead of hanging.
        for (let round = 0; round < 20; round++) {
          const batch = await store.claimDueTimers(2000, 4);
          if (batch.length === 0) break;
          got.push(...batch);
        }
        return got;
      };
      const all = (await Promise.all(Array.from({ length: 20 }, claimer))).flat();
      expect(all).toHaveLength(60);
      expect(new Set(all)).toEqual(new Set(timers.map((t) => t.member)));
      expect(await store.claimDueTimers(10_000, 100)).toEqual(["t-later"]);
    }));

  it("lists sessions, bounded by the limit", () =>
    withHarness(async ({ store }) => {
      const sids = ["sess-list-1", "sess-list-2", "sess-list-3"];
      for (const sid of sids) await created(store, sid);
      expect(new Set(await store.listSessions(100))).toEqual(new Set(sids));
      const two = await store.listSessions(2);
      expect(two).toHaveLength(2);
      expect(sids).toEqual(expect.arrayContaining(two));
    }));

  it("refreshes the active TTL on every key at each commit", () =>
    withHarness(async (h) => {
      const c1 = testCommit(await created(h.store), "in:a");
      await h.store.commit(c1);
      await wait(h, 200);
      await h.store.commit(testCommit(c1.state, "in:b"));
      for (const [key, ttl] of Object.entries(await h.store.ttls(SID))) {
        expect(ttl, key).toBeGreaterThan(ACTIVE - 150); // not the 200 ms older TTL of the first commit
        expect(ttl, key).toBeLessThanOrEqual(ACTIVE);
      }
    }));

  it("gives every key the finished TTL on a terminal commit", () =>
    withHarness(async ({ store }) => {
      await store.commit(testCommit(await created(store), "in:a", { terminal: true }));
      const ttls = await store.ttls(SID);
      expect(Object.keys(ttls).sort()).toEqual(["applied", "log", "state"]);
      for (const [key, ttl] of Object.entries(ttls)) {
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(FINISHED);
      }
    }));

  it("slides the TTL while a session is active and drops every key once it expires", () =>
    withHarness(
      async (h) => {
        const c1 = testCommit(await created(h.store), "in:a");
        await h.store.commit(c1);
        await h.store.claimIdempotencyKey("client-key-ttl", SID);
        await wait(h, 350);
        await h.store.commit(testCommit(c1.state, "in:b"));
        await wait(h, 350); // 700 ms after create, 350 ms after the last commit: still alive
        expect((await h.store.load(SID))?.state.meta.version).toBe(2);
        await wait(h, 700);
        expect(await h.store.load(SID)).toBeNull();
        expect(await h.store.transitionLog(SID)).toEqual([]);
        expect(await h.store.isApplied(SID, "in:a")).toBe(false);
        await expectAbsent(h.store, SID);
        expect(await h.store.claimIdempotencyKey("client-key-ttl", OTHER)).toBe(OTHER);
      },
      { activeTtlMs: 600, finishedTtlMs: 600, idempotencyTtlMs: 600 },
    ));
}

/** An idempotency key's TTL and peeking at it, and a thread's first session. */
function idempotencyTtlAndThreadCases({ withHarness, wait }: SuiteHelpers): void {
  it("an idempotency key slides with its session and expires with it, never after", () =>
    withHarness(
      async (h) => {
        expect(await h.store.claimIdempotencyKey("client-key-life", SID)).toBe(SID);
        const s = testSessionState(SID);
        expect(await h.store.create(s, "client-key-life")).toBe(true);
        await wait(h, 300);
        const c1 = testCommit(s, "in:a");
        await h.store.commit(c1);
        await wait(h, 300); // past the key's own 400 ms: the commit moved it with the session
        expect(await h.store.claimIdempotencyKey("client-key-life", OTHER)).toBe(SID);
        await h.store.commit(testCommit(c1.state, "in:b", { terminal: true }));
        await wait(h, 300); // past the finished TTL: the session and its key are gone together
        expect(await h.store.load(SID)).toBeNull();
        expect(await h.store.claimIdempotencyKey("client-key-life", OTHER)).toBe(OTHER);
      },
      { activeTtlMs: 600, finishedTtlMs: 200, idempotencyTtlMs: 400 },
    ));

  it("does not touch an idempotency key that names another session", () =>
    withHarness(
      async (h) => {
        expect(await h.store.claimIdempotencyKey("client-key-other", OTHER)).toBe(OTHER);
        const s = testSessionState(SID);
        await h.store.create(s, "client-key-other");
        await h.store.commit(testCommit(s, "in:a", { terminal: true }));
        await wait(h, 250); // the session is gone; the other session's key keeps its own TTL
        expect(await h.store.load(SID)).toBeNull();
        expect(await h.store.claimIdempotencyKey("client-key-other", SID)).toBe(OTHER);
      },
      { activeTtlMs: 60_000, finishedTtlMs: 200, idempotencyTtlMs: 60_000 },
    ));

  it("peeks at an idempotency key without claiming it", () =>
    withHarness(async ({ store }) => {
      expect(await store.peekIdempotencyKey("client-key-peek")).toBeNull();
      expect(await store.claimIdempotencyKey("client-key-peek", OTHER)).toBe(OTHER);
      expect(await store.peekIdempotencyKey("client-key-peek")).toBe(OTHER);
      expect(await store.peekIdempotencyKey("client-key-never")).toBeNull();
      expect(await store.claimIdempotencyKey("client-key-never", SID)).toBe(SID); // the peek claimed nothing
    }));

  it("creates a thread on its first session, lists sessions once each, oldest first", () =>
    withHarness(async ({ store }) => {
      expect(await store.loadThread("thread-conf-1")).toBeNull();
      const a = await store.attachToThread("thread-conf-1", "alice", SID, 1000);
      expect(a).toEqual({
        ok: true,
        thread: { thread_id: "thread-conf-1", owner: "alice", created_at: 1000, updated_at: 1000, sessions: [SID] },
      });
      await store.attachToThread("thread-conf-1", "alice", OTHER, 2000);
      const again = await store.attachToThread("thread-conf-1", "alice", SID, 3000); // a retried submit
      expect(again.ok && again.thread.sessions).toEqual([SID, OTHER]);
      expect(await store.loadThread("thread-conf-1")).toEqual({
        thread_id: "thread-conf-1",
        owner: "alice",
        created_at: 1000,
        updated_at: 2000,
        sessions: [SID, OTHER],
      });
    }));
}

/** A thread's owner, cap and expiry, and racing writers. */
function threadAndRaceCases({ withHarness, wait, created }: SuiteHelpers): void {
  it("refuses a session into another owner's thread and writes nothing", () =>
    withHarness(async ({ store }) => {
      await store.attachToThread("thread-conf-2", "alice", SID, 1000);
      expect(await store.attachToThread("thread-conf-2", "bob", OTHER, 2000)).toEqual({
        ok: false,
        reason: "owned_by_other",
      });
      expect(await store.attachToThread("thread-conf-2", null, OTHER, 2000)).toEqual({
        ok: false,
        reason: "owned_by_other",
      });
      await store.attachToThread("thread-conf-3", null, SID, 1000);
      expect(await store.attachToThread("thread-conf-3", "alice", OTHER, 2000)).toEqual({
        ok: false,
        reason: "owned_by_other",
      });
      expect((await store.loadThread("thread-conf-2"))?.sessions).toEqual([SID]);
      expect(await store.loadThread("thread-conf-3")).toMatchObject({ owner: null, sessions: [SID] });
    }));

  it(`keeps a thread's latest ${LIMITS.maxThreadSessions} sessions`, () =>
    withHarness(async ({ store }) => {
      const ids = Array.from(
        { length: LIMITS.maxThreadSessions + 5 },
        (_, i) => `sess-thr-${String(i).padStart(4, "0")}`,
      );
      for (const [i, sid] of ids.entries()) await store.attachToThread("thread-conf-4", "alice", sid, i);
      expect((await store.loadThread("thread-conf-4"))?.sessions).toEqual(ids.slice(5));
    }));

  it("a thread expires the longer session TTL after its last session was added", () =>
    withHarness(
      async (h) => {
        await h.store.attachToThread("thread-conf-5", "alice", SID, 1);
        await wait(h, 400);
        await h.store.attachToThread("thread-conf-5", "alice", OTHER, 2); // restarts the TTL
        await wait(h, 400);
        expect((await h.store.loadThread("thread-conf-5"))?.sessions).toEqual([SID, OTHER]);
        await wait(h, 300);
        expect(await h.store.loadThread("thread-conf-5")).toBeNull();
        // gone, so it can be made anew (by anyone: its id is free again)
        expect((await h.store.attachToThread("thread-conf-5", "bob", SID, 3)).ok).toBe(true);
      },
      { activeTtlMs: 600, finishedTtlMs: 200, idempotencyTtlMs: 600 },
    ));

  it("applies 100 inputs from 10 racing writers exactly once each", () =>
    withHarness(async ({ store }) => {
      await created(store);
      let conflicts = 0;
      const writer = async (w: number) => {
        for (let i = 0; i < 10; i++) {
          const input = `in:${w}:${i}`;
          for (;;) {
            const loaded = await store.load(SID);
            if (!loaded) throw new Error("session vanished");
            const r = await store.commit(testCommit(loaded.state, input));
            if (r.ok) break;
            if (r.reason !== "conflict") throw new Error(`unexpected ${r.reason}`);
            conflicts++;
          }
        }
      };
      await Promise.all(Array.from({ length: 10 }, (_, w) => writer(w)));
      expect((await store.load(SID))?.state.meta.version).toBe(100);
      const log = await store.transitionLog(SID);
      expect(log.map((l) => l.version)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(new Set(log.map((l) => l.input_id)).size).toBe(100);
      expect(conflicts).toBeGreaterThan(0); // the writers really raced
    }));
}

/** A thread's long-term references: kept in order and bounded, only for the thread's owner, expiring. */
function threadRefsCases({ withHarness, wait }: SuiteHelpers): void {
  it("keeps a thread's long-term references in order, each once, the latest longTermRefsMax", () =>
    withHarness(
      async ({ store }) => {
        expect(await store.loadThreadRefs("thread-refs-1")).toEqual([]);
        await store.attachToThread("thread-refs-1", "alice", SID, 1000);
        expect(await store.keepThreadRefs("thread-refs-1", "alice", ["a", "b"])).toBe(true);
        expect(await store.keepThreadRefs("thread-refs-1", "alice", ["b", "c"])).toBe(true); // b is kept already
        expect(await store.loadThreadRefs("thread-refs-1")).toEqual(["a", "b", "c"]);
        expect(await store.keepThreadRefs("thread-refs-1", "alice", ["c", "d", "e"])).toBe(true);
        expect(await store.loadThreadRefs("thread-refs-1")).toEqual(["b", "c", "d", "e"]);
        expect(await store.keepThreadRefs("thread-refs-1", "alice", [])).toBe(true);
        expect(await store.loadThreadRefs("thread-refs-1")).toEqual(["b", "c", "d", "e"]);
      },
      { longTermRefsMax: 4 },
    ));

  it("writes references only into an existing thread of the same owner", () =>
    withHarness(async ({ store }) => {
      expect(await store.keepThreadRefs("thread-refs-2", "alice", ["never"])).toBe(false);
      await store.attachToThread("thread-refs-2", "alice", SID, 1000);
      expect(await store.loadThreadRefs("thread-refs-2")).toEqual([]);
      expect(await store.keepThreadRefs("thread-refs-2", "bob", ["not bob's"])).toBe(false);
      expect(await store.keepThreadRefs("thread-refs-2", null, ["no owner's"])).toBe(false);
      await store.attachToThread("thread-refs-3", null, SID, 1000);
      expect(await store.keepThreadRefs("thread-refs-3", "alice", ["alice's"])).toBe(false);
      expect(await store.keepThreadRefs("thread-refs-3", null, ["anyone's"])).toBe(true);
      expect(await store.loadThreadRefs("thread-refs-2")).toEqual([]);
      expect(await store.loadThreadRefs("thread-refs-3")).toEqual(["anyone's"]);
    }));

  it("references expire longTermRefsTtlMs after their last write", () =>
    withHarness(
      async (h) => {
        await h.store.attachToThread("thread-refs-4", "alice", SID, 1);
        await h.store.keepThreadRefs("thread-refs-4", "alice", ["first"]);
        await wait(h, 250);
        await h.store.keepThreadRefs("thread-refs-4", "alice", ["second"]); // restarts the TTL of all
        await wait(h, 250);
        expect(await h.store.loadThreadRefs("thread-refs-4")).toEqual(["first", "second"]);
        await wait(h, 250);
        expect(await h.store.loadThreadRefs("thread-refs-4")).toEqual([]);
        expect((await h.store.loadThread("thread-refs-4"))?.sessions).toEqual([SID]); // the thread lives on
      },
      { longTermRefsTtlMs: 400 },
    ));

  it("a thread that expired takes its references with it: the same id made anew starts without them", () =>
    withHarness(
      async (h) => {
        await h.store.attachToThread("thread-refs-5", "alice", SID, 1);
        await h.store.keepThreadRefs("thread-refs-5", "alice", ["alice's secret"]);
        await wait(h, 700); // the thread (600 ms) is gone; its references (60 s) would not be
        expect(await h.store.loadThreadRefs("thread-refs-5")).toEqual([]);
        expect((await h.store.attachToThread("thread-refs-5", "bob", OTHER, 2)).ok).toBe(true);
        expect(await h.store.loadThreadRefs("thread-refs-5")).toEqual([]);
        expect(await h.store.keepThreadRefs("thread-refs-5", "bob", ["bob's"])).toBe(true);
        expect(await h.store.loadThreadRefs("thread-refs-5")).toEqual(["bob's"]);
      },
      { activeTtlMs: 600, finishedTtlMs: 200, idempotencyTtlMs: 600 },
    ));
}
