// JetStream on a 3-node cluster of real nats-server processes (access control on, every node
// with the generated config): provisioning at R3 from two nodes at once, work going on while the
// node leading the task stream is killed, and a deployment's move from R1 to R3.
import { naming as makeNaming, type Naming, type TaskOutcome } from "@agentmesh/contracts";
import { jetstream, jetstreamManager, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startNatsCluster, type NatsCluster } from "../../../test/setup/nats-cluster.js";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { cancelledChecker, markCancelled } from "./cancelled.js";
import { connectNats } from "./connect.js";
import { provision, replicasCurrent } from "./provision.js";
import {
  makeTask,
  plannerProvision,
  recordingLog,
  retried,
  sessionId,
  sleep,
  streamMessages,
  waitFor,
} from "./test-support.js";
import type { Worker } from "./types.js";
import { startWorker } from "./worker.js";

const PREFIX = uniquePrefix("clu");
const n: Naming = makeNaming(PREFIX);
let cluster: NatsCluster;
const conns: NatsConnection[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

async function connectAs(user: string, url = cluster.url): Promise<NatsConnection> {
  const nc = await connectNats({ url, name: `cluster-test-${user}`, nkeySeedFile: cluster.seedFile(user) });
  conns.push(nc);
  return nc;
}

const streamsOf = (nm: Naming) => [...Object.values(nm.streams), `KV_${nm.kv.cancelled}`];

/** Index of the node a stream's leader runs on. */
function nodeOf(info: StreamInfo): number {
  const leader = info.cluster?.leader;
  const i = cluster.nodes.findIndex((x) => x.name === leader);
  if (i < 0) throw new Error(`stream ${info.config.name} has no leader (${JSON.stringify(info.cluster)})`);
  return i;
}

/**
 * Waits until every stream of `nm` has `replicas` replicas, and so do its durable consumers (the
 * role's on the task stream, the coordinator's on the inbox), each with a leader and every
 * follower current. A consumer follows its stream's new replica count a moment after the stream.
 */
async function waitReplicated(
  nc: NatsConnection,
  nm: Naming,
  replicas: number,
  ms = 30_000,
  consumers = true,
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const last: Record<string, unknown> = {};
  await waitFor(
    async () => {
      for (const s of streamsOf(nm)) {
        const info = await jsm.streams.info(s).catch(() => null);
        last[s] = info?.cluster;
        if (!info || info.config.num_replicas !== replicas || !replicasCurrent(info.cluster, replicas)) return false;
      }
      for (const [s, c] of !consumers
        ? []
        : ([
            [nm.streams.tasks, nm.consumers.role("planner")],
            [nm.streams.inbox, nm.consumers.coordinator],
          ] as const)) {
        const info = await jsm.consumers.info(s, c).catch(() => null);
        last[`${s}/${c}`] = info?.cluster;
        if (!info || !replicasCurrent(info.cluster, replicas)) return false;
      }
      return true;
    },
    ms,
    () => `every stream and consumer at R${replicas} with its followers current: ${JSON.stringify(last)}`,
  );
}

/** The nodes' logged warnings and errors that name `stream` or JetStream's meta layer (for failure messages). */
function serverWarnings(stream: string): string {
  return cluster.nodes
    .flatMap((x) =>
      x.output
        .split("\n")
        .filter((l) => /\[(WRN|ERR)\]/.test(l) && (l.includes(stream) || /meta|RAFT|cluster state/i.test(l)))
        .slice(-15)
        .map((l) => `${x.name}: ${l}`),
    )
    .join("\n");
}

/** A planner worker that answers every task; its results land on the inbox stream. */
async function planner(nm: Naming, user = "planner"): Promise<Worker> {
  const nc = await connectAs(user);
  const w = await startWorker(nc, {
    naming: nm,
    role: "planner",
    concurrency: 4,
    ackWaitMs: 5000,
    maxDeliver: 5,
    log: recordingLog(),
    handler: () =>
      Promise.resolve<TaskOutcome>({
        ok: true,
        output: { answer: 4 },
        provenance: {
          role: "planner",
          op: "plan",
          model: "scripted",
          tier: "fast",
          prompt_version: "1",
          attempt: 0,
          usage: { prompt_tokens: 1, completion_tokens: 1, cost_usd: 0, model_calls: 1 },
          latency_ms: 1,
        },
      }),
  });
  cleanups.push(() => w.stop(500));
  return w;
}

/** Publishes a task for each session, retrying while the cluster fails over (as the coordinator's nak does). */
async function publishTasks(nc: NatsConnection, nm: Naming, sids: readonly string[]): Promise<void> {
  const js = jetstream(nc);
  for (const sid of sids) {
    const task = makeTask(sid);
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        await js.publish(nm.task("planner", "plan"), JSON.stringify(task), { msgID: task.task_id, timeout: 2000 });
        break;
      } catch (err) {
        // named, so a failure says which step it was (a NATS timeout carries no stack of its own)
        if (Date.now() > until) throw new Error(`publishing the task of ${sid} failed for 30 s`, { cause: err });
        await sleep(200);
      }
    }
  }
}

/** The sessions whose results are on the inbox stream. */
async function answered(nc: NatsConnection, nm: Naming): Promise<Set<string>> {
  const msgs = await streamMessages(nc, nm.streams.inbox);
  return new Set(msgs.map((m) => (m.json() as { session_id: string }).session_id));
}

beforeAll(async () => {
  cluster = await startNatsCluster({ accessPrefix: PREFIX, roles: ["planner"] });
}, 90_000);

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  for (const c of conns.splice(0)) await c.close().catch(() => undefined);
});

afterAll(async () => {
  await cluster?.stop();
});

describe("JetStream on a 3-node cluster", () => {
  it("NATS_URL with every node: provisioned at R3 from two nodes at once, then the task stream's leader is killed and work goes on", async () => {
    // two coordinators, each connected to another node, provision at the same time
    const c0 = await connectAs("coordinator", cluster.nodes[0]!.url);
    const c2 = await connectAs("coordinator", cluster.nodes[2]!.url);
    const o = { ...plannerProvision(PREFIX, 3), naming: n };
    await Promise.all([provision(c0, o), provision(c2, o), provision(c0, o)]);
    const admin = await connectAs("admin");
    await waitReplicated(admin, n, 3);

    await planner(n);
    const first = Array.from({ length: 5 }, () => sessionId());
    await publishTasks(admin, n, first);
    await waitFor(async () => (await answered(admin, n)).size === 5, 20_000, "the first five results");

    const jsm = await jetstreamManager(admin);
    const victim = nodeOf(await retried(() => jsm.streams.info(n.streams.tasks)));
    const everyNode = await connectAs("coordinator");
    await cluster.kill(victim);
    // a coordinator starting while the node is down: its provisioning waits out the failover
    await provision(everyNode, o);
    const later = Array.from({ length: 5 }, () => sessionId());
    await publishTasks(admin, n, later);
    await waitFor(
      async () => {
        const got = await answered(admin, n).catch(() => new Set<string>());
        return [...first, ...later].every((s) => got.has(s));
      },
      45_000,
      "results of the tasks published after the leader's node died",
    );
    // the task stream has a new leader on a node still up
    const after = await retried(() => jsm.streams.info(n.streams.tasks));
    expect(nodeOf(after)).not.toBe(victim);
    expect(after.config.num_replicas).toBe(3);

    await cluster.start(victim);
    // (its consumers' followers on the restarted node catch up on their next acks: none come here)
    await waitReplicated(admin, n, 3, 60_000, false);
    // provisioning again (a coordinator restart) changes nothing and fails on nothing
    await provision(c0, o);
    expect((await retried(() => jsm.streams.info(n.streams.tasks))).config.num_replicas).toBe(3);
  }, 180_000);

  it("a deployment moves from R1 to R3 by provisioning again with 3 replicas; then the only node that held its data dies and nothing is lost", async () => {
    // a prefix of its own (the generated permissions are the first test's prefix's: provision as admin)
    const prefix = uniquePrefix("move");
    const nm = makeNaming(prefix);
    // the node the first test restarted may still be rejoining: an R1 stream placed on it would
    // take no publish meanwhile
    await cluster.waitHealthy();
    const admin = await connectAs("admin");
    const coordinator = admin;
    const jsm = await retried(() => jetstreamManager(admin));
    try {
      await provision(coordinator, plannerProvision(prefix, 1));
      for (const s of streamsOf(nm)) expect((await retried(() => jsm.streams.info(s))).config.num_replicas).toBe(1);
      // queued work and history at R1: tasks nobody has taken yet, events, a cancelled session
      const queued = Array.from({ length: 6 }, () => sessionId());
      await publishTasks(admin, nm, queued);
      const js = jetstream(admin);
      for (let i = 0; i < 3; i++) {
        await retried(() => js.publish(nm.events(queued[0]!), JSON.stringify({ i }), { msgID: `event-${i}` }));
      }
      await retried(() => markCancelled(admin, nm, "cancelledsession0001", "test"));
      const holder = nodeOf(await retried(() => jsm.streams.info(nm.streams.tasks)));

      // the move: what a coordinator does at start with AGENTMESH_STREAM_REPLICAS=3
      await provision(coordinator, plannerProvision(prefix, 3));
      await waitReplicated(admin, nm, 3);
      // ...and again (every later coordinator start): nothing to change
      await provision(coordinator, plannerProvision(prefix, 3));
      // provisioning handed the consumer's leadership to a new replica: its election may still run
      const consumer = await retried(() => jsm.consumers.info(nm.streams.tasks, nm.consumers.role("planner")));
      expect(consumer.config.num_replicas).toBe(3);

      await cluster.kill(holder);
      // a new leader is elected among the two followers; under a loaded machine (CI) that has
      // taken past 30 s, as for the other streams below. The wait names what it last saw.
      let seen: unknown = "no answer yet";
      const tasks = await waitFor(
        async () => {
          const info = await jsm.streams.info(nm.streams.tasks).catch((err: unknown) => String(err));
          seen = typeof info === "string" ? info : { messages: info.state.messages, cluster: info.cluster };
          return typeof info !== "string" && info.state.messages === 6;
        },
        60_000,
        () =>
          `the task stream served by a surviving node with its 6 tasks (last seen: ${JSON.stringify(seen)}); ` +
          `the nodes' warnings:\n${serverWarnings(nm.streams.tasks)}`,
      ).then(() => retried(() => jsm.streams.info(nm.streams.tasks)));
      expect(nodeOf(tasks)).not.toBe(holder);
      // the other streams elect their new leaders at their own pace (on a loaded machine past
      // 30 s at times): a read may time out meanwhile
      const events = await retried(() => jsm.streams.info(nm.streams.events), 60_000);
      expect(events.state.messages).toBe(3);
      expect(await retried(() => cancelledChecker(admin, nm)("cancelledsession0001"), 60_000)).toBe(true);
      expect(await retried(() => cancelledChecker(admin, nm)("neverCancelled000001"), 60_000)).toBe(false);
      // the consumer moved with its stream: every queued task is worked
      await planner(nm, "admin");
      await waitFor(
        async () => {
          const got = await answered(admin, nm).catch(() => new Set<string>());
          return queued.every((s) => got.has(s));
        },
        45_000,
        "every task queued before the move worked after it",
      );
    } finally {
      if (!cluster.nodes.every((x) => x.proc)) {
        for (const x of cluster.nodes) if (!x.proc) await cluster.start(x.index);
      }
      for (const s of streamsOf(nm)) await jsm.streams.delete(s).catch(() => false);
    }
  }, 180_000);
});
