import { describe, expect, it } from "vitest";
import type { GatewayLimits, IsLive, LimitsOptions } from "./limits.js";

export { createLocalLimits, type LocalLimitsOptions } from "./limits-local.js";

/** What a factory hands the suite: fresh limits with an empty key space, and optionally a way to move their clock. */
export interface LimitsHarness {
  readonly limits: GatewayLimits;
  /** Moves the limits' clock forward; without it the suite waits in real time. */
  readonly advance?: (ms: number) => void;
  cleanup(): Promise<void>;
}

/** Builds limits with these settings; the factory picks the key prefix (unique per call). */
export type LimitsFactory = (opts: Omit<LimitsOptions, "keyPrefix">) => Promise<LimitsHarness>;

const DEFAULTS: Omit<LimitsOptions, "keyPrefix"> = {
  rateLimit: 3,
  rateWindowMs: 600,
  maxConcurrentSessions: 3,
  sessionTtlMs: 60_000,
};

/** An `isLive` that says every session has ended except those not in `ended`, and records whom it was asked about. */
function liveness(ended: ReadonlySet<string> = new Set()): { isLive: IsLive; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    isLive: (sid) => {
      asked.push(sid);
      return Promise.resolve(!ended.has(sid));
    },
  };
}

/** Runs `body` against fresh limits with these settings (over the defaults) and always cleans up. */
type WithLimits = (
  over: Partial<Omit<LimitsOptions, "keyPrefix">>,
  body: (h: LimitsHarness, wait: (ms: number) => Promise<void>) => Promise<void>,
) => Promise<void>;

/** The suite's `WithLimits` over one factory. */
function limitsRunner(factory: LimitsFactory): WithLimits {
  return async (over, body) => {
    const h = await factory({ ...DEFAULTS, ...over });
    const wait = async (ms: number) => (h.advance ? h.advance(ms) : new Promise<void>((r) => setTimeout(r, ms)));
    try {
      await body(h, wait);
    } finally {
      await h.cleanup();
    }
  };
}

/** The retry-after of a request the limits must refuse. */
async function refusal(limits: GatewayLimits, owner: string): Promise<number> {
  const d = await limits.allowRequest(owner);
  if (d.allowed) throw new Error(`expected ${owner}'s request to be refused`);
  return d.retryAfterMs;
}

/**
 * The limits contract, run against the Redis adapter and the local twin, so the twin the
 * gateway's tests use cannot drift from the limits replicas share.
 */
export function runLimitsConformance(name: string, factory: LimitsFactory): void {
  const withLimits = limitsRunner(factory);
  describe(`gateway limits conformance: ${name}`, () => {
    rateCases(withLimits);
    admissionCases(withLimits);
    requestKeyCases(withLimits);
    streamCases(withLimits);
    answerCases(withLimits);
  });
}

/** The request rate: a sliding window per owner, refused requests not counted, exact under concurrency. */
function rateCases(withLimits: WithLimits): void {
  it("allows rateLimit requests per sliding window and says when the next one fits", () =>
    withLimits({ rateLimit: 2, rateWindowMs: 600 }, async ({ limits }, wait) => {
      expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      await wait(300);
      expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      const first = await refusal(limits, "alice");
      expect(first).toBeGreaterThan(150); // until the first request, 300 ms old, leaves
      expect(first).toBeLessThanOrEqual(300);
      await wait(first + 20);
      // The first left, the second (300 ms younger) did not: a fixed window would allow two here.
      expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      const second = await refusal(limits, "alice");
      expect(second).toBeGreaterThan(100);
      expect(second).toBeLessThanOrEqual(300);
    }));

  it("does not count refused requests, so retrying early does not push the wait further", () =>
    withLimits({ rateLimit: 2, rateWindowMs: 600 }, async ({ limits }, wait) => {
      for (let i = 0; i < 2; i++) expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      await wait(300);
      const retries: number[] = [];
      for (let i = 0; i < 5; i++) retries.push(await refusal(limits, "alice"));
      for (const r of retries) expect(r).toBeLessThanOrEqual(retries[0] ?? 0);
      await wait((retries[0] ?? 0) + 40);
      for (let i = 0; i < 2; i++) expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      await refusal(limits, "alice");
    }));

  it("keeps each owner's rate apart", () =>
    withLimits({ rateLimit: 1 }, async ({ limits }) => {
      expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      await refusal(limits, "alice");
      expect(await limits.allowRequest("bob")).toEqual({ allowed: true });
    }));

  it("allows exactly rateLimit of 20 concurrent requests", () =>
    withLimits({ rateLimit: 5, rateWindowMs: 5000 }, async ({ limits }) => {
      const ds = await Promise.all(Array.from({ length: 20 }, () => limits.allowRequest("alice")));
      expect(ds.filter((d) => d.allowed)).toHaveLength(5);
      for (const d of ds) {
        if (d.allowed) continue;
        expect(d.retryAfterMs).toBeGreaterThan(0);
        expect(d.retryAfterMs).toBeLessThanOrEqual(5000);
      }
    }));
}

/** Session admission: the maximum, re-admission, dropping ended sessions, failures, lapses, races, bad ids. */
function admissionCases(withLimits: WithLimits): void {
  it("admits up to the maximum, refuses the next with the count, and admits again after a release", () =>
    withLimits({}, async ({ limits }) => {
      const { isLive } = liveness();
      for (const sid of ["s1", "s2", "s3"]) expect(await limits.admit("alice", sid, isLive)).toEqual({ ok: true });
      expect(await limits.admit("alice", "s4", isLive)).toEqual({ ok: false, count: 3, max: 3 });
      expect(await limits.admit("bob", "s4", isLive)).toEqual({ ok: true });
      await limits.release("alice", "s2");
      await limits.release("alice", "never-admitted");
      await limits.release("bob", "s1"); // another owner's release frees nothing of alice's
      expect(await limits.admit("alice", "s4", isLive)).toEqual({ ok: true });
      expect(await limits.admit("alice", "s5", isLive)).toEqual({ ok: false, count: 3, max: 3 });
    }));

  it("re-admits a session that holds a slot without taking another (a retried request)", () =>
    withLimits({ maxConcurrentSessions: 2 }, async ({ limits }) => {
      const { isLive } = liveness();
      expect(await limits.admit("alice", "s1", isLive)).toEqual({ ok: true });
      expect(await limits.admit("alice", "s1", isLive)).toEqual({ ok: true });
      expect(await limits.admit("alice", "s2", isLive)).toEqual({ ok: true });
      expect(await limits.admit("alice", "s1", isLive)).toEqual({ ok: true });
      expect(await limits.admit("alice", "s3", isLive)).toEqual({ ok: false, count: 2, max: 2 });
    }));

  it("when full, drops the held sessions that have ended (asking only then) and admits", () =>
    withLimits({}, async ({ limits }) => {
      const ended = new Set<string>();
      const probe = liveness(ended);
      for (const sid of ["s1", "s2", "s3"])
        expect(await limits.admit("alice", sid, probe.isLive)).toEqual({ ok: true });
      expect(probe.asked).toEqual([]);
      ended.add("s1").add("s3");
      expect(await limits.admit("alice", "s4", probe.isLive)).toEqual({ ok: true });
      expect(probe.asked.sort()).toEqual(["s1", "s2", "s3"]);
      expect(await limits.admit("alice", "s5", probe.isLive)).toEqual({ ok: true }); // s3's slot, no question asked
      expect(probe.asked).toHaveLength(3);
      expect(await limits.admit("alice", "s6", probe.isLive)).toEqual({ ok: false, count: 3, max: 3 });
      expect(probe.asked.slice(3).sort()).toEqual(["s2", "s4", "s5"]);
    }));

  it("fails an admission whose liveness check fails, taking no slot", () =>
    withLimits({ maxConcurrentSessions: 1 }, async ({ limits }) => {
      expect(await limits.admit("alice", "s1", liveness().isLive)).toEqual({ ok: true });
      await expect(limits.admit("alice", "s2", () => Promise.reject(new Error("status unreadable")))).rejects.toThrow(
        /status unreadable/,
      );
      expect(await limits.admit("alice", "s3", liveness().isLive)).toEqual({ ok: false, count: 1, max: 1 });
    }));

  it("lets a slot lapse after sessionTtlMs when nothing releases it; re-admitting renews it", () =>
    withLimits({ maxConcurrentSessions: 1, sessionTtlMs: 400 }, async ({ limits }, wait) => {
      const probe = liveness();
      expect(await limits.admit("alice", "s1", probe.isLive)).toEqual({ ok: true });
      await wait(250);
      expect(await limits.admit("alice", "s1", probe.isLive)).toEqual({ ok: true });
      await wait(250); // past the first lapse, before the renewed one
      expect(await limits.admit("alice", "s2", probe.isLive)).toEqual({ ok: false, count: 1, max: 1 });
      expect(probe.asked).toEqual(["s1"]);
      await wait(250);
      expect(await limits.admit("alice", "s2", probe.isLive)).toEqual({ ok: true });
      expect(probe.asked).toEqual(["s1"]); // it lapsed by itself
    }));

  it("admits exactly the maximum of 2x as many concurrent sessions", () =>
    withLimits({ maxConcurrentSessions: 4 }, async ({ limits }) => {
      const { isLive } = liveness();
      const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => limits.admit("alice", `race-${i}`, isLive)));
      expect(rs.filter((r) => r.ok)).toHaveLength(4);
      expect(rs.filter((r) => !r.ok)).toEqual(Array.from({ length: 4 }, () => ({ ok: false, count: 4, max: 4 })));
    }));

  it("refuses owners and session ids that are not API key names or ids", () =>
    withLimits({}, async ({ limits }) => {
      await expect(limits.allowRequest("Alice:*")).rejects.toThrow(/invalid limits owner/);
      await expect(limits.admit("alice", "", liveness().isLive)).rejects.toThrow(/invalid session id/);
      await expect(limits.release("", "s1")).rejects.toThrow(/invalid limits owner/);
    }));
}

/** Request keys: the first claim is new, the same body again is a retry, another body is refused; per owner; they lapse. */
function requestKeyCases(withLimits: WithLimits): void {
  it("tells a retry (same body) from a reused key (another body), per owner, until the key lapses", () =>
    withLimits({ requestKeyTtlMs: 400 }, async ({ limits }, wait) => {
      expect(await limits.claimRequestKey("alice", "k1", "d1")).toBe("new");
      expect(await limits.claimRequestKey("alice", "k1", "d1")).toBe("same");
      expect(await limits.claimRequestKey("alice", "k1", "d2")).toBe("other");
      expect(await limits.claimRequestKey("alice", "k1", "d1")).toBe("same"); // the refused body did not replace it
      expect(await limits.claimRequestKey("bob", "k1", "d2")).toBe("new");
      expect(await limits.claimRequestKey("alice", "k2", "d2")).toBe("new");
      await wait(450);
      expect(await limits.claimRequestKey("alice", "k1", "d2")).toBe("new");
    }));

  it("gives exactly one of 10 concurrent claims of one key `new`", () =>
    withLimits({}, async ({ limits }) => {
      const rs = await Promise.all(Array.from({ length: 10 }, () => limits.claimRequestKey("alice", "race", "d")));
      expect(rs.filter((r) => r === "new")).toHaveLength(1);
      expect(rs.filter((r) => r === "same")).toHaveLength(9);
    }));

  it("refuses request keys and digests that are not hashes", () =>
    withLimits({}, async ({ limits }) => {
      await expect(limits.claimRequestKey("alice", "a:b*", "d")).rejects.toThrow(/invalid request key/);
      await expect(limits.claimRequestKey("alice", "k", "")).rejects.toThrow(/invalid request key/);
    }));
}

/** Stream bounds: a lease per open stream up to the per-owner maximum, renewed by a heartbeat, lapsing without one; their own opening rate. */
function streamCases(withLimits: WithLimits): void {
  it("leases up to maxStreamsPerKey streams per owner, refuses the next with the count, and leases again after a close", () =>
    withLimits({ maxStreamsPerKey: 2 }, async ({ limits }) => {
      expect(await limits.openStream("alice", "st1")).toEqual({ ok: true });
      expect(await limits.openStream("alice", "st2")).toEqual({ ok: true });
      expect(await limits.openStream("alice", "st3")).toEqual({ ok: false, count: 2, max: 2 });
      expect(await limits.openStream("bob", "st3")).toEqual({ ok: true });
      await limits.closeStream("alice", "st1");
      await limits.closeStream("alice", "st1"); // twice is once
      expect(await limits.openStream("alice", "st3")).toEqual({ ok: true });
      expect(await limits.openStream("alice", "st4")).toEqual({ ok: false, count: 2, max: 2 });
    }));

  it("lets an unrenewed lease lapse (a crashed replica's streams), while renewed ones hold", () =>
    withLimits({ maxStreamsPerKey: 2, streamLeaseTtlMs: 400 }, async ({ limits }, wait) => {
      expect(await limits.openStream("alice", "kept")).toEqual({ ok: true });
      expect(await limits.openStream("alice", "crashed")).toEqual({ ok: true });
      await wait(250);
      await limits.renewStreams("alice", ["kept"]);
      await wait(250); // past the first lease's end, before the renewed one's
      expect(await limits.openStream("alice", "new1")).toEqual({ ok: true });
      expect(await limits.openStream("alice", "new2")).toEqual({ ok: false, count: 2, max: 2 });
    }));

  it("leases exactly maxStreamsPerKey of 3x as many concurrent openings", () =>
    withLimits({ maxStreamsPerKey: 5 }, async ({ limits }) => {
      const rs = await Promise.all(Array.from({ length: 15 }, (_, i) => limits.openStream("alice", `race-${i}`)));
      expect(rs.filter((r) => r.ok)).toHaveLength(5);
    }));

  it("counts stream openings in their own window, apart from the request rate", () =>
    withLimits({ streamOpenRate: 2, streamOpenWindowMs: 600, rateLimit: 1 }, async ({ limits }) => {
      expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      expect(await limits.allowStreamOpen("alice")).toEqual({ allowed: true });
      expect(await limits.allowStreamOpen("alice")).toEqual({ allowed: true });
      const refused = await limits.allowStreamOpen("alice");
      expect(refused.allowed).toBe(false);
      expect(refused.allowed ? 0 : refused.retryAfterMs).toBeGreaterThan(0);
      expect(refused.allowed ? 0 : refused.retryAfterMs).toBeLessThanOrEqual(600);
      expect(await limits.allowStreamOpen("bob")).toEqual({ allowed: true });
    }));
}

/** A new answer's admission: the request, the stream opening, the lease and the session slot together, all or nothing. */
function answerCases(withLimits: WithLimits): void {
  const tight = { rateLimit: 1, streamOpenRate: 1, maxStreamsPerKey: 1, maxConcurrentSessions: 1 };
  it("takes a request, a stream opening, a lease and a session slot at once", () =>
    withLimits(tight, async ({ limits }) => {
      const { isLive } = liveness();
      expect(await limits.admitAnswer("alice", { sessionId: "s1", leaseId: "st1" }, isLive)).toEqual({ ok: true });
      expect((await limits.allowRequest("alice")).allowed).toBe(false);
      expect((await limits.allowStreamOpen("alice")).allowed).toBe(false);
      expect(await limits.openStream("alice", "st2")).toEqual({ ok: false, count: 1, max: 1 });
      expect(await limits.admit("alice", "s2", isLive)).toEqual({ ok: false, count: 1, max: 1 });
      expect(await limits.admitAnswer("bob", { sessionId: "s1", leaseId: "st1" }, isLive)).toEqual({ ok: true });
    }));

  it("without a lease takes the request and the slot only", () =>
    withLimits(tight, async ({ limits }) => {
      const { isLive } = liveness();
      expect(await limits.admitAnswer("alice", { sessionId: "s1" }, isLive)).toEqual({ ok: true });
      expect((await limits.allowRequest("alice")).allowed).toBe(false);
      expect(await limits.allowStreamOpen("alice")).toEqual({ allowed: true });
      expect(await limits.openStream("alice", "st1")).toEqual({ ok: true });
    }));

  it("names the first bound without room, in order, and a refusal counts and takes nothing", () =>
    withLimits({ ...tight, rateLimit: 2, streamOpenRate: 2 }, async ({ limits }) => {
      const { isLive } = liveness();
      const answer = () => limits.admitAnswer("alice", { sessionId: "s9", leaseId: "st9" }, isLive);
      // sessions full (a live one), then streams full too, then the opening rate used up, then the request rate
      expect(await limits.admit("alice", "s1", isLive)).toEqual({ ok: true });
      expect(await answer()).toEqual({ ok: false, refused: "sessions", count: 1, max: 1 });
      expect(await limits.openStream("alice", "st1")).toEqual({ ok: true });
      expect(await answer()).toEqual({ ok: false, refused: "streams", count: 1, max: 1 });
      for (let i = 0; i < 2; i++) expect(await limits.allowStreamOpen("alice")).toEqual({ allowed: true });
      const open = await answer();
      expect(open.ok ? null : open.refused).toBe("stream_rate");
      for (let i = 0; i < 2; i++) expect(await limits.allowRequest("alice")).toEqual({ allowed: true });
      const rate = await answer();
      expect(rate).toMatchObject({ ok: false, refused: "rate" });
      expect(!rate.ok && "retryAfterMs" in rate ? rate.retryAfterMs : 0).toBeGreaterThan(0);
      // none of the four refusals counted a request or an opening, nor took the lease or the slot
      await limits.release("alice", "s1");
      await limits.closeStream("alice", "st1");
      expect((await limits.allowRequest("alice")).allowed).toBe(false);
      expect(await limits.openStream("alice", "st9")).toEqual({ ok: true });
      expect(await limits.admit("alice", "s9", isLive)).toEqual({ ok: true });
    }));

  it("when the session slots are full, drops the held sessions that have ended and admits", () =>
    withLimits({ maxConcurrentSessions: 2 }, async ({ limits }) => {
      const ended = new Set<string>();
      const probe = liveness(ended);
      for (const sid of ["s1", "s2"]) expect(await limits.admit("alice", sid, probe.isLive)).toEqual({ ok: true });
      expect(await limits.admitAnswer("alice", { sessionId: "s3" }, probe.isLive)).toEqual({
        ok: false,
        refused: "sessions",
        count: 2,
        max: 2,
      });
      ended.add("s2");
      expect(await limits.admitAnswer("alice", { sessionId: "s3", leaseId: "st3" }, probe.isLive)).toEqual({
        ok: true,
      });
      expect(probe.asked.sort()).toEqual(["s1", "s1", "s2", "s2"]);
    }));

  it("admits exactly the most of 3x as many concurrent answers", () =>
    withLimits({ maxConcurrentSessions: 4, maxStreamsPerKey: 100, rateLimit: 100 }, async ({ limits }) => {
      const { isLive } = liveness();
      const rs = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          limits.admitAnswer("alice", { sessionId: `s${i}`, leaseId: `l${i}` }, isLive),
        ),
      );
      expect(rs.filter((r) => r.ok)).toHaveLength(4);
      expect(rs.filter((r) => !r.ok && r.refused === "sessions")).toHaveLength(8);
    }));
}
