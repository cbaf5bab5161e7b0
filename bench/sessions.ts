import { performance } from "node:perf_hooks";
import { assertAppliedOnce, type Cluster } from "../test/e2e/harness.js";
import type { SessionEvent } from "@agentmesh/contracts";
import type { EventRouter, Tracked } from "./events.js";
import { summarize, type Summary } from "./stats.js";
import type { SeenCodeRun, Workload } from "./workloads.js";

/** One session as measured and verified. */
export interface SessionResult {
  readonly index: number;
  readonly sessionId: string;
  readonly outcome: "ok" | "lost" | "failed";
  /** Why it is lost or failed (null when ok). */
  readonly reason: string | null;
  /** Submit request → `complete` event received, ms. */
  readonly wallMs: number | null;
  /** Submit request → the session's first event received, ms. */
  readonly firstEventMs: number | null;
  readonly submitMs: number | null;
  readonly steps: number;
  /** Σ provenance.latency_ms of the session's step events. */
  readonly handlerMs: number;
  /** (wall − Σ handler) / steps. */
  readonly overheadPerStepMs: number | null;
  readonly transitions: number | null;
  readonly events: number;
  readonly duplicateEvents: number;
  /** Gaps between consecutive transitions (ms, sub-ms resolution: see `transitionGaps`), keyed by the step that closed them. */
  readonly hops: ReadonlyArray<{ readonly what: string; readonly ms: number }>;
  /** Submit start → first transition committed, and last transition → `complete` received (ms, wall clock). */
  readonly headMs: number | null;
  readonly tailMs: number | null;
}

export interface LevelResult {
  readonly concurrency: number;
  readonly sessions: number;
  readonly ok: number;
  readonly lost: number;
  readonly failed: number;
  /** First submit → last session settled, ms. */
  readonly elapsedMs: number;
  /** Completed-and-verified sessions per second over elapsedMs. */
  readonly sessionsPerSecond: number;
  readonly wallMs: Summary;
  readonly firstEventMs: Summary;
  readonly overheadPerStepMs: Summary;
  readonly submitMs: Summary;
  readonly handlerMsTotal: number;
  readonly stepsPerSession: Summary;
  readonly eventsPerSession: Summary;
  readonly duplicateEvents: number;
  /** Transition-to-transition gaps per step kind (role.op), and the head/tail of a session. */
  readonly hopsMs: Record<string, Summary>;
  /** Every gap between consecutive transitions of the verified sessions, whatever the step: the runtime's cost per transition, to set beside the floor's per-step latency. */
  readonly transitionMs: Summary;
  /** Agent steps (step events) of the verified sessions per second over elapsedMs. */
  readonly agentStepsPerSecond: number;
  readonly problems: ReadonlyArray<Pick<SessionResult, "sessionId" | "outcome" | "reason">>;
  readonly results: readonly SessionResult[];
}

export interface LevelOptions {
  readonly cluster: Cluster;
  readonly router: EventRouter;
  /** What each session asks and how its answer is verified. */
  readonly workload: Workload;
  readonly concurrency: number;
  readonly sessions: number;
  /** First question index (questions differ across levels). */
  readonly firstIndex: number;
  /** Session id stem, unique per run and level. */
  readonly stem: string;
  readonly timeoutMs: number;
  readonly onProgress?: (done: number, total: number, elapsedMs: number) => void;
  /** Called once the last session settled, before stragglers are awaited and sessions verified. */
  readonly onTimedEnd?: () => void;
  /**
   * Submit requests in flight at most (default: no bound beyond `concurrency`). With a large
   * `concurrency` (every session in flight) this keeps the submits themselves a sane stream.
   */
  readonly submitWindow?: number;
  /** Told the number of live sessions (submit accepted, not yet settled) whenever it changes. */
  readonly onLive?: (live: number) => void;
}

interface Raw {
  readonly index: number;
  readonly sessionId: string;
  readonly tracked: Tracked;
  submitStartEpoch: number;
  submitMs: number | null;
  wallMs: number | null;
  firstEventMs: number | null;
  error: string | null;
}

/** Runs `sessions` sessions with at most `concurrency` in flight; verifies each against Redis afterwards. */
export async function runLevel(o: LevelOptions): Promise<LevelResult & { readonly peakLive: number }> {
  const raws: Raw[] = [];
  let next = 0;
  let done = 0;
  let live = 0;
  let peakLive = 0;
  const start = performance.now();
  const window = o.submitWindow ?? Number.POSITIVE_INFINITY;
  let submitting = 0;
  const waiting: Array<() => void> = [];
  const liveBy = (d: number) => {
    live += d;
    peakLive = Math.max(peakLive, live);
    o.onLive?.(live);
  };

  async function one(i: number): Promise<void> {
    const index = o.firstIndex + i;
    const sessionId = `${o.stem}-${String(i).padStart(5, "0")}`;
    const tracked = o.router.track(sessionId);
    const raw: Raw = {
      index,
      sessionId,
      tracked,
      submitStartEpoch: Date.now(),
      submitMs: null,
      wallMs: null,
      firstEventMs: null,
      error: null,
    };
    raws.push(raw);
    while (submitting >= window) await new Promise<void>((r) => waiting.push(r));
    submitting++;
    const t0 = performance.now();
    try {
      await o.cluster.submit(o.workload.query(index), sessionId, o.workload.submit);
      raw.submitMs = performance.now() - t0;
    } catch (err) {
      raw.error = `submit failed: ${(err as Error).message}`;
      return;
    } finally {
      submitting--;
      waiting.shift()?.();
    }
    liveBy(1);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([tracked.done, new Promise<void>((r) => (timer = setTimeout(r, o.timeoutMs)))]);
    clearTimeout(timer);
    liveBy(-1);
    if (tracked.completeAt !== null) raw.wallMs = tracked.completeAt - t0;
    if (tracked.firstAt !== null) raw.firstEventMs = tracked.firstAt - t0;
  }

  async function worker(): Promise<void> {
    while (next < o.sessions) {
      const i = next++;
      await one(i);
      done++;
      o.onProgress?.(done, o.sessions, performance.now() - start);
    }
  }

  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.sessions) }, () => worker()));
  const elapsedMs = performance.now() - start;
  o.onTimedEnd?.();
  // Step events of an earlier transition may arrive after `complete` (a coordinator publishes a
  // transition's task before its events), so give stragglers a moment before counting steps.
  await o.router.settle(
    raws.map((r) => r.sessionId),
    3000,
  );

  const results: SessionResult[] = [];
  for (const raw of raws) results.push(await verify(o.cluster, o.workload, raw));
  for (const raw of raws) o.router.forget(raw.sessionId);
  results.sort((a, b) => a.index - b.index);
  return { ...aggregate(o.concurrency, elapsedMs, results), peakLive };
}

/**
 * The gap before each agent step's transition: when the bench received that transition's events
 * minus when it received the previous transition's, keyed by the step (role.op), in version order.
 * Both are the bench's own clock, so the gap has sub-ms resolution; the coordinators stamp events
 * in whole ms, which at c=1 would round a 2.4 ms transition to 2 or 3.
 */
export function transitionGaps(t: Pick<Tracked, "steps" | "versionArrivedAt">): Array<{ what: string; ms: number }> {
  const hops: Array<{ what: string; ms: number }> = [];
  for (const [version, s] of [...t.steps.entries()].sort((a, b) => a[0] - b[0])) {
    const prev = t.versionArrivedAt.get(version - 1);
    const at = t.versionArrivedAt.get(version);
    if (prev !== undefined && at !== undefined) hops.push({ what: s.what, ms: at - prev });
  }
  return hops;
}

/** Checks a session against its events and its Redis state and transition log. */
async function verify(cluster: Cluster, workload: Workload, raw: Raw): Promise<SessionResult> {
  const t = raw.tracked;
  const steps = [...t.steps.entries()].sort((a, b) => a[0] - b[0]);
  const handlerMs = steps.reduce((a, [, s]) => a + s.latencyMs, 0);
  const hops = transitionGaps(t);
  const firstAt = t.versionAt.get(1);
  const lastAt = t.complete ? t.versionAt.get(t.complete.version) : undefined;
  const base = {
    index: raw.index,
    sessionId: raw.sessionId,
    wallMs: raw.wallMs,
    firstEventMs: raw.firstEventMs,
    submitMs: raw.submitMs,
    steps: steps.length,
    handlerMs,
    overheadPerStepMs: raw.wallMs !== null && steps.length > 0 ? (raw.wallMs - handlerMs) / steps.length : null,
    transitions: t.complete?.version ?? null,
    events: t.events,
    duplicateEvents: t.duplicates,
    hops,
    headMs: firstAt !== undefined ? firstAt - raw.submitStartEpoch : null,
    tailMs: lastAt !== undefined && t.completeEpoch !== null ? t.completeEpoch - lastAt : null,
  };
  const bad = (outcome: "lost" | "failed", reason: string): SessionResult => ({ ...base, outcome, reason });

  if (raw.error) return bad("failed", raw.error);
  const seen = {
    sessionId: raw.sessionId,
    index: raw.index,
    complete: t.complete,
    stepNames: steps.map(([, s]) => s.what),
    codeRuns: t.codeRuns,
  };
  const problem = await checkSession(cluster, workload, seen);
  return problem ? bad(problem.outcome, problem.reason) : { ...base, outcome: "ok", reason: null };
}

/** What a client saw of a session, to check against Redis. */
export interface Seen {
  readonly sessionId: string;
  /** The session's index in the workload (its query). */
  readonly index: number;
  /** The `complete` event, or null when none came within the timeout. */
  readonly complete: Extract<SessionEvent, { type: "complete" }> | null;
  /** `role.op` of each distinct `step` event, in version order. */
  readonly stepNames: readonly string[];
  /** The `code_result` events seen. */
  readonly codeRuns: readonly SeenCodeRun[];
  /** The owner Redis must record (the gateway's API key name); unchecked when absent. */
  readonly owner?: string;
}

/**
 * Why a session does not count as verified, or null when it does: it completed with an answer
 * the workload accepts, Redis agrees with the `complete` event (status, version, and the answer in
 * the workflow's own field), its transition log holds versions 1..n once each, and the client saw
 * one step event per transition after the first.
 */
export async function checkSession(
  cluster: Cluster,
  workload: Workload,
  s: Seen,
): Promise<{ outcome: "lost" | "failed"; reason: string } | null> {
  const loaded = await cluster.store.load(s.sessionId);
  if (!s.complete) {
    const where = loaded
      ? `Redis has it at version ${loaded.state.meta.version}, status ${loaded.state.meta.status}`
      : "Redis has no such session";
    return { outcome: "lost", reason: `no complete event within the timeout; ${where}` };
  }
  const failed = (reason: string) => ({ outcome: "failed" as const, reason });
  if (s.complete.status !== "completed")
    return failed(`completed with status ${s.complete.status}: ${s.complete.final_answer}`);
  const wrong = workload.check(s.index, {
    answer: s.complete.final_answer,
    stepNames: s.stepNames,
    codeRuns: s.codeRuns,
  });
  if (wrong !== null) return failed(wrong);
  if (!loaded) return failed("complete event seen but the session is missing in Redis");
  const { state } = loaded;
  const answer = workload.storedAnswer(state.data);
  if (
    state.meta.status !== "completed" ||
    answer !== s.complete.final_answer ||
    state.meta.version !== s.complete.version
  ) {
    return failed(
      `Redis disagrees with the complete event: status ${state.meta.status}, version ${state.meta.version}, answer ${JSON.stringify(answer)}`,
    );
  }
  if (s.owner !== undefined && state.meta.owner !== s.owner)
    return failed(`Redis records owner ${JSON.stringify(state.meta.owner)}, expected ${JSON.stringify(s.owner)}`);
  try {
    assertAppliedOnce(await cluster.store.transitionLog(s.sessionId), state.meta.version);
  } catch (err) {
    return failed((err as Error).message);
  }
  if (s.stepNames.length !== state.meta.version - 1)
    return failed(`saw ${s.stepNames.length} step events for ${state.meta.version} transitions`);
  return null;
}

/** A level's figures from its sessions; also pools the sessions of several rounds (elapsed summed). */
export function aggregate(concurrency: number, elapsedMs: number, results: readonly SessionResult[]): LevelResult {
  const ok = results.filter((r) => r.outcome === "ok");
  const num = (xs: Array<number | null>) => xs.filter((x): x is number => x !== null);
  const hopSamples = new Map<string, number[]>();
  const add = (k: string, v: number | null) => {
    if (v === null) return;
    let a = hopSamples.get(k);
    if (!a) hopSamples.set(k, (a = []));
    a.push(v);
  };
  for (const r of ok) {
    add("submit→first transition", r.headMs);
    const seen = new Map<string, number>();
    for (const h of r.hops) {
      const n = (seen.get(h.what) ?? 0) + 1;
      seen.set(h.what, n);
      add(n === 1 ? h.what : `${h.what} #${n}`, h.ms);
    }
    add("last transition→complete received", r.tailMs);
  }
  return {
    concurrency,
    sessions: results.length,
    ok: ok.length,
    lost: results.filter((r) => r.outcome === "lost").length,
    failed: results.filter((r) => r.outcome === "failed").length,
    elapsedMs,
    sessionsPerSecond: ok.length / (elapsedMs / 1000),
    wallMs: summarize(num(ok.map((r) => r.wallMs))),
    firstEventMs: summarize(num(ok.map((r) => r.firstEventMs))),
    overheadPerStepMs: summarize(num(ok.map((r) => r.overheadPerStepMs))),
    submitMs: summarize(num(results.map((r) => r.submitMs))),
    handlerMsTotal: ok.reduce((a, r) => a + r.handlerMs, 0),
    stepsPerSession: summarize(ok.map((r) => r.steps)),
    eventsPerSession: summarize(ok.map((r) => r.events)),
    duplicateEvents: results.reduce((a, r) => a + r.duplicateEvents, 0),
    hopsMs: Object.fromEntries([...hopSamples].map(([k, v]) => [k, summarize(v)])),
    transitionMs: summarize(ok.flatMap((r) => r.hops.map((h) => h.ms))),
    agentStepsPerSecond: ok.reduce((a, r) => a + r.steps, 0) / (elapsedMs / 1000),
    problems: results
      .filter((r) => r.outcome !== "ok")
      .map((r) => ({ sessionId: r.sessionId, outcome: r.outcome, reason: r.reason })),
    results,
  };
}
