// The bench's event router and its per-transition figure: a transition's gap is the bench's receipt
// of its events minus its receipt of the previous transition's, at sub-ms resolution, and neither a
// repeated message nor the events' whole-ms `at` moves it.
import { describe, expect, it } from "vitest";
import { SCHEMA_VERSION, type SessionEvent } from "@agentmesh/contracts";
import { EventRouter } from "../../bench/events.js";
import { transitionGaps } from "../../bench/sessions.js";

const SID = "benchgaps0001";
const SUBJECT = `p.events.${SID}`;

type Deliver = (err: Error | null, m: { subject: string; data: Uint8Array }) => void;

/** A connection whose one subscription the test feeds by hand. */
function fakeConnection() {
  let deliver: Deliver | null = null;
  const nc = {
    subscribe(_subject: string, opts: { callback: Deliver }) {
      deliver = opts.callback;
      return { unsubscribe: () => undefined };
    },
  };
  const send = (events: SessionEvent[]) => {
    const batch = { v: SCHEMA_VERSION, session_id: SID, version: events[0]!.version, events };
    deliver!(null, { subject: SUBJECT, data: new TextEncoder().encode(JSON.stringify(batch)) });
  };
  return { nc: nc as unknown as ConstructorParameters<typeof EventRouter>[0], send };
}

const head = (version: number, index: number, timestamp: number) =>
  ({ v: SCHEMA_VERSION, session_id: SID, version, index, timestamp }) as const;

const stage = (version: number, at: number): SessionEvent =>
  ({ ...head(version, 0, at), type: "stage", name: "planner", description: "plan", status: "running" }) as SessionEvent;

const step = (version: number, at: number, op: string): SessionEvent =>
  ({
    ...head(version, 0, at),
    type: "step",
    task_id: `${SID}.${version - 1}.0.0`,
    summary: `${op} attempt 0: ok`,
    provenance: {
      role: op.split(".")[0],
      op: op.split(".")[1],
      model: "scripted",
      tier: "standard",
      prompt_version: "v1",
      attempt: 0,
      usage: { prompt_tokens: 1, completion_tokens: 1, cost_usd: 0, model_calls: 1 },
      latency_ms: 0,
    },
  }) as SessionEvent;

/** A router on a hand-fed connection, tracking SID; `at(ms, events)` delivers one message received at `ms`. */
function routed() {
  const { nc, send } = fakeConnection();
  let clock = 0;
  const router = new EventRouter(nc, { eventsAll: "p.events.>" }, () => clock);
  const t = router.track(SID);
  const at = (ms: number, events: SessionEvent[]) => {
    clock = ms;
    send(events);
  };
  return { router, t, at };
}

describe("the bench's transition gaps", () => {
  it("are the differences of the bench's receipt times, not of the events' whole-ms at", () => {
    const { router, t, at } = routed();
    // every event says at = 5000 ms: a whole-ms clock would make every gap 0
    at(1000, [stage(1, 5000)]);
    at(1002.375, [step(2, 5000, "planner.plan")]);
    at(1004.125, [step(3, 5000, "critic.review_plan")]);
    expect(transitionGaps(t)).toEqual([
      { what: "planner.plan", ms: 2.375 },
      { what: "critic.review_plan", ms: 1.75 },
    ]);
    // the coordinators' clock is still kept, for the head and tail rows
    expect(t.versionAt.get(1)).toBe(5000);
    expect(router.malformed).toBe(0);
    expect(router.untracked).toBe(0);
  });

  it("keep the first receipt when a transition's events arrive again (a re-published outbox)", () => {
    const { t, at } = routed();
    at(10, [stage(1, 1)]);
    at(13, [step(2, 1, "planner.plan")]);
    at(40, [stage(1, 1)]); // the first transition's outbox published a second time
    at(40, [step(2, 1, "planner.plan")]);
    at(41.5, [step(3, 1, "critic.review_plan")]);
    expect(t.duplicates).toBe(2);
    expect(transitionGaps(t)).toEqual([
      { what: "planner.plan", ms: 3 },
      { what: "critic.review_plan", ms: 28.5 },
    ]);
  });

  it("start at a transition's first message when its events were split over two", () => {
    const { t, at } = routed();
    at(100, [stage(1, 1)]);
    at(102, [stage(2, 1)]); // version 2's first part (a batch over the size limit goes in index order)
    at(109, [{ ...step(2, 1, "planner.plan"), index: 1 } as SessionEvent]);
    expect(transitionGaps(t)).toEqual([{ what: "planner.plan", ms: 2 }]);
  });

  it("skip a step whose previous transition was never seen", () => {
    const { router, t, at } = routed();
    at(5, [step(3, 1, "critic.review_plan")]);
    at(7, [step(4, 1, "expert.answer")]);
    expect(transitionGaps(t)).toEqual([{ what: "expert.answer", ms: 2 }]);
    expect(router.malformed).toBe(0);
  });

  it("come in version order whatever order the steps were recorded in", () => {
    const steps = new Map([
      [4, { what: "expert.answer", latencyMs: 0 }],
      [2, { what: "planner.plan", latencyMs: 0 }],
      [3, { what: "critic.review_plan", latencyMs: 0 }],
    ]);
    const versionArrivedAt = new Map([
      [1, 0],
      [2, 1],
      [3, 3],
      [4, 6],
    ]);
    expect(transitionGaps({ steps, versionArrivedAt })).toEqual([
      { what: "planner.plan", ms: 1 },
      { what: "critic.review_plan", ms: 2 },
      { what: "expert.answer", ms: 3 },
    ]);
  });
});
