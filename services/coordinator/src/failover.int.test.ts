import { afterEach, describe, expect, test } from "vitest";
import { SCHEMA_VERSION, inputIds, taskId, type InboxInput, type OutboxEntry } from "@agentmesh/contracts";
import { connectRedis, createRedisSessionStore } from "@agentmesh/session-store";
import { createLogger } from "@agentmesh/service-kit";
import { DEFAULTS } from "@agentmesh/workflows/testing";
import type { Redis } from "ioredis";
import { startRedisTopology, type RedisTopology } from "../../../test/setup/redis-topology.js";
import { createCoordinatorCore, type CoordinatorPublisher } from "./core.js";

// A Redis primary and one replica of their own (no sentinels: the replica is promoted by hand, so
// the order of events is exact). The replica is paused (SIGSTOP) and cut off across a commit, the
// primary is killed, the replica resumes and is promoted. With the replica wait, the coordinator publishes
// nothing of the commit the promoted replica lacks; without it, it publishes a task of a version
// the store no longer has: the loss the wait prevents, kept as a test so the wait cannot go away
// unnoticed (docs/redis-failover.md).

const log = createLogger({ service: "failover-test", level: "silent" });
const SID = "failoverloss0001";
/** The planner task the session's start dispatches (version 1, made by the start). */
const FIRST_TASK = taskId(SID, 1, 0, 0, inputIds.start(SID));
let topology: RedisTopology | null = null;
const clients: Redis[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  await topology?.stop();
  topology = null;
});

/** A coordinator core on a store over `url` that records what it publishes. */
async function coordinatorOn(url: string, waitReplicas: number) {
  const redis = await connectRedis(url, { name: "failover-test" });
  clients.push(redis);
  const store = createRedisSessionStore(redis, {
    keyPrefix: "fo",
    activeTtlMs: 3_600_000,
    finishedTtlMs: 3_600_000,
    idempotencyTtlMs: 3_600_000,
    waitReplicas,
    waitTimeoutMs: 300,
  });
  const inbox: InboxInput[] = [];
  const published: OutboxEntry[] = [];
  const publisher: CoordinatorPublisher = {
    async publishInbox(i) {
      inbox.push(i);
    },
    async publishOutbox(entries) {
      published.push(...entries);
    },
  };
  const core = createCoordinatorCore({ store, publisher, log, defaults: DEFAULTS });
  const taskIds = () => published.flatMap((e) => (e.kind === "task" ? [e.task.task_id] : []));
  return { redis, store, core, inbox, taskIds };
}

/**
 * Submits a session (replicated before the fault), pauses the replica, steps the session's start
 * (one commit, then its outbox), kills the primary, resumes and promotes the replica. Returns what
 * the coordinator published and what the promoted replica holds.
 */
async function commitAcrossFailover(waitReplicas: number) {
  topology = await startRedisTopology({ replicas: 1, sentinels: 0 });
  const [primary, replica] = topology.nodes;
  if (!primary || !replica) throw new Error("no topology");
  const c = await coordinatorOn(topology.url(primary), waitReplicas);
  const reply = await c.core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID });
  expect(reply.ok).toBe(true);
  const start = c.inbox.at(-1);
  if (!start) throw new Error("no start");
  await topology.awaitInSync(replica);

  await topology.signal(replica, "SIGSTOP");
  // A paused process's kernel still takes in what the primary sends, and the replica would apply
  // it on SIGCONT: cut the link too (the primary drops its replica connection; the paused replica
  // cannot reconnect), so the commit below reaches no replica, as in a network partition.
  const admin = topology.client(primary);
  expect(Number(await admin.call("CLIENT", "KILL", "TYPE", "replica"))).toBe(1);
  const t0 = Date.now();
  const stepped = await c.core.handleInput(start).then(
    (v) => ({ ok: true as const, v }),
    (err: unknown) => ({ ok: false as const, err: err as Error }),
  );
  const stepMs = Date.now() - t0;
  const primaryVersion = (await c.store.load(SID))?.state.meta.version;
  await topology.signal(primary, "SIGKILL");
  await topology.signal(replica, "SIGCONT");
  await topology.promote(replica);

  const after = await coordinatorOn(topology.url(replica), 0);
  const held = await after.store.load(SID);
  return { c, after, start, stepped, stepMs, primaryVersion, held, published: c.taskIds() };
}

/** A primary with one replica of its own, and two coordinators on the primary that wait for it. */
async function twoCoordinators() {
  const topo = await startRedisTopology({ replicas: 1, sentinels: 0 });
  topology = topo;
  const [primary, replica] = topo.nodes;
  if (!primary || !replica) throw new Error("no topology");
  const a = await coordinatorOn(topo.url(primary), 1);
  const b = await coordinatorOn(topo.url(primary), 1);
  return { topo, replica, a, b };
}

describe("a commit survives a failover before it is acted on", () => {
  test("with the replica wait: the unreplicated commit publishes nothing; after the failover the session goes on, nothing lost", async () => {
    const r = await commitAcrossFailover(1);
    // the primary had the commit, but the paused replica could not confirm it: nothing went out
    expect(r.primaryVersion).toBe(1);
    expect(r.stepped.ok).toBe(false);
    expect(r.stepped.ok ? "" : r.stepped.err.message).toMatch(/only 0 of 1 Redis replicas confirmed/);
    expect(r.stepMs).toBeGreaterThanOrEqual(250);
    expect(r.published).toEqual([]);
    // the promoted replica never saw it: the session is where it was before the start
    expect(r.held?.state.meta.version).toBe(0);
    // the input was not acked: its redelivery steps the session on the new primary, once
    expect(await r.after.core.handleInput(r.start)).toBe("ack");
    expect(r.after.taskIds()).toEqual([FIRST_TASK]);
    expect((await r.after.store.transitionLog(SID)).map((l) => [l.version, l.input_id])).toEqual([
      [1, r.start.input_id],
    ]);
    console.log(`[failover] with the wait: the step failed after ${r.stepMs} ms; nothing published, nothing lost`);
  });

  test("without the wait (the single-node default): the published task belongs to a version the promoted replica lost", async () => {
    const r = await commitAcrossFailover(0);
    expect(r.stepped).toEqual({ ok: true, v: "ack" });
    expect(r.primaryVersion).toBe(1);
    // the loss the wait prevents: a task of version 1 is out, acked, and the store holds version 0
    expect(r.published).toEqual([FIRST_TASK]);
    expect(r.held?.state.meta.version).toBe(0);
    expect(await r.after.store.transitionLog(SID)).toEqual([]);
    console.log(
      `[failover] without the wait: task ${r.published.join(",")} published for version ${r.primaryVersion}; the promoted replica holds version ${r.held?.state.meta.version}`,
    );
  });

  test("a stored outbox another coordinator committed is re-published only once the replica confirms it", async () => {
    const { topo, replica, a, b } = await twoCoordinators();
    await a.core.submit({ v: SCHEMA_VERSION, query: "What is 2 + 2?", session_id: SID });
    const start = a.inbox.at(-1);
    if (!start) throw new Error("no start");
    await topo.awaitInSync(replica);
    // paused, still connected: its acknowledged offset stays where it was
    await topo.signal(replica, "SIGSTOP");
    await expect(a.core.handleInput(start)).rejects.toThrow(/replicas confirmed/);
    // b never wrote the commit: its load writes after it (the stored outbox's fence), so b's wait
    // covers that commit and fails too (WAIT covers only writes made on the connection it runs on)
    await expect(b.core.handleInput(start)).rejects.toThrow(/only 0 of 1 Redis replicas confirmed/);
    expect(b.taskIds()).toEqual([]);
    await topo.signal(replica, "SIGCONT");
    expect(await b.core.handleInput(start)).toBe("ack");
    expect(b.taskIds()).toEqual([FIRST_TASK]);
    expect(b.core.stats).toMatchObject({ republished: 2, duplicates: 1, applied: 0 });
    expect(a.taskIds()).toEqual([]);
  });

  test("a new session's start goes out only once the replica holds the session, from a retried submit on another coordinator too", async () => {
    const { topo, replica, a, b } = await twoCoordinators();
    // b has written before, and the replica confirmed it: a WAIT on b's connection now passes at
    // once unless b writes again
    await b.core.submit({ v: SCHEMA_VERSION, query: "What is 1 + 1?" });
    await topo.awaitInSync(replica);
    await b.store.awaitReplicas();
    b.inbox.length = 0;
    await topo.signal(replica, "SIGSTOP");
    const req = { v: SCHEMA_VERSION, query: "What is 2 + 2?", idempotency_key: "failover-submit" } as const;
    // created on the primary, unconfirmed: the client is told it failed and no start goes out
    await expect(a.core.submit(req)).rejects.toThrow(/only 0 of 1 Redis replicas confirmed/);
    expect(a.inbox).toEqual([]);
    // the client's retry lands on b, which finds the session: b's wait must cover a's create
    // (WAIT counts this connection's writes only: finding the session writes a fence), so it fails too
    await expect(b.core.submit(req)).rejects.toThrow(/only 0 of 1 Redis replicas confirmed/);
    expect(b.inbox).toEqual([]);
    await topo.signal(replica, "SIGCONT");
    const reply = await b.core.submit(req);
    expect(reply).toMatchObject({ ok: true, created: false });
    expect(b.inbox.map((i) => i.kind)).toEqual(["start"]);
    // the session the start names is on the replica
    const promotedView = await coordinatorOn(topo.url(replica), 0);
    const sid = reply.ok ? reply.session_id : "";
    expect((await promotedView.store.load(sid))?.state.meta.session_id).toBe(sid);
  });
});
