import { performance } from "node:perf_hooks";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Naming, SessionEvent } from "@agentmesh/contracts";
import { decodeEvents } from "@agentmesh/messaging";
import type { SeenCodeRun } from "./workloads.js";

/** What the bench saw of one session's events. */
export interface Tracked {
  readonly sessionId: string;
  /** Resolves on the first `complete` event. */
  readonly done: Promise<void>;
  /** performance.now() when the session's first event arrived (null until then). */
  firstAt: number | null;
  /** performance.now() when the `complete` event arrived (null until then). */
  completeAt: number | null;
  /** Date.now() when the `complete` event arrived, to compare with the events' `timestamp`. */
  completeEpoch: number | null;
  complete: Extract<SessionEvent, { type: "complete" }> | null;
  /** `step` events by session version: role.op and the agent handler's latency_ms. */
  readonly steps: Map<number, { readonly what: string; readonly latencyMs: number }>;
  /** `at` (coordinator clock, whole ms) of the first event of each version. */
  readonly versionAt: Map<number, number>;
  /**
   * performance.now() when the first event of each version reached the bench. A transition's
   * events are one message (several, in index order, only past the size limit: the first counts),
   * published with its tasks on one connection, so the server has routed version v's events before
   * any agent sees the task that leads to v + 1: arrivals come in version order, and consecutive
   * ones are the gap between consecutive transitions at sub-ms resolution (the events' `timestamp` has
   * whole ms). The bench's own scheduling delay is inside each arrival.
   */
  readonly versionArrivedAt: Map<number, number>;
  /** `code_result` events, in arrival order. */
  readonly codeRuns: SeenCodeRun[];
  /** Distinct events (version:index) and repeats of one already seen. */
  events: number;
  duplicates: number;
}

/**
 * Follows every session of a prefix through ONE core subscription to `<p>.events.>` and routes
 * each event to its session by id. (An ordered JetStream consumer per session costs a consumer
 * create/delete on the server per session, which at 64 in flight would measure the bench, not
 * the runtime.) Core delivery only sees what is published after subscribing, so a session must
 * be tracked before it is submitted. Events are de-duplicated by `version:index`, since a
 * re-published outbox reaches core subscribers again even when JetStream drops the duplicate.
 */
export class EventRouter {
  private readonly sessions = new Map<string, Tracked & { resolve(): void; seen: Set<string> }>();
  private readonly sub: Subscription;
  /** Events of sessions not tracked (e.g. warm-up leftovers), unreadable ones, and mismatches. */
  untracked = 0;
  malformed = 0;

  /** Stamps each message's arrival (performance.now(); injected by tests). */
  private readonly clock: () => number;

  constructor(
    nc: Pick<NatsConnection, "subscribe">,
    naming: Pick<Naming, "eventsAll">,
    clock: () => number = () => performance.now(),
  ) {
    this.clock = clock;
    this.sub = nc.subscribe(naming.eventsAll, {
      callback: (err, m) => {
        if (!err) this.onEvent(m.subject, m.data);
      },
    });
  }

  private onEvent(subject: string, data: Uint8Array): void {
    const now = this.clock();
    // one message per transition: its events, in order
    const d = decodeEvents(data);
    if (!d.ok || d.value.events.some((e) => !subject.endsWith(`.${e.session_id}`))) {
      this.malformed++;
      return;
    }
    this.malformed += d.value.skipped.length;
    for (const e of d.value.events) this.onOne(e, now);
  }

  private onOne(parsed: SessionEvent, now: number): void {
    const t = this.sessions.get(parsed.session_id);
    if (!t) {
      this.untracked++;
      return;
    }
    const key = `${parsed.version}:${parsed.index}`;
    if (t.seen.has(key)) {
      t.duplicates++;
      return;
    }
    t.seen.add(key);
    t.events++;
    t.firstAt ??= now;
    if (!t.versionAt.has(parsed.version)) t.versionAt.set(parsed.version, parsed.timestamp);
    if (!t.versionArrivedAt.has(parsed.version)) t.versionArrivedAt.set(parsed.version, now);
    if (parsed.type === "step") {
      t.steps.set(parsed.version, {
        what: `${parsed.provenance.role}.${parsed.provenance.op}`,
        latencyMs: parsed.provenance.latency_ms,
      });
    } else if (parsed.type === "code_result") {
      t.codeRuns.push({ exitCode: parsed.exit_code, stdout: parsed.stdout, stderr: parsed.stderr });
    } else if (parsed.type === "complete" && t.complete === null) {
      t.complete = parsed;
      t.completeAt = now;
      t.completeEpoch = Date.now();
      t.resolve();
    }
  }

  /** Starts routing a session's events; call before submitting it. */
  track(sessionId: string): Tracked {
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const t = {
      sessionId,
      done,
      resolve,
      seen: new Set<string>(),
      firstAt: null,
      completeAt: null,
      completeEpoch: null,
      complete: null,
      steps: new Map(),
      versionAt: new Map(),
      versionArrivedAt: new Map(),
      codeRuns: [],
      events: 0,
      duplicates: 0,
    };
    this.sessions.set(sessionId, t);
    return t;
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Waits until every completed session among `ids` has its step events for versions 2..final (or `ms` passes). */
  async settle(ids: readonly string[], ms: number): Promise<void> {
    const end = performance.now() + ms;
    const pending = () =>
      ids.some((id) => {
        const t = this.sessions.get(id);
        return t?.complete != null && t.steps.size < t.complete.version - 1;
      });
    while (pending() && performance.now() < end) await new Promise((r) => setTimeout(r, 50));
  }

  close(): void {
    this.sub.unsubscribe();
  }
}
