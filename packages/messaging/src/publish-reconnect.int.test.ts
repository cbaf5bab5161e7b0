// A publish whose server is cut off while it awaits its ack, on a 3-node cluster of real
// nats-server processes behind TCP relays: the ack of the first send never comes (it would go to
// the old connection), so the publisher sends again once the client is on another node, and
// JetStream keeps one copy.
import { HEADERS, naming as makeNaming, type Naming } from "@agentmesh/contracts";
import type { StoredMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsCluster, type NatsCluster } from "../../../test/setup/nats-cluster.js";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { connectNats } from "./connect.js";
import { provision } from "./provision.js";
import { JS_ACK_TIMEOUT_MS, createPublisher } from "./publisher.js";
import {
  makeTask,
  plannerProvision,
  recordingLog,
  retried,
  sessionId,
  streamMessages,
  waitFor,
} from "./test-support.js";

const PREFIX = uniquePrefix("repub");
const n: Naming = makeNaming(PREFIX);
let cluster: NatsCluster;
const conns: NatsConnection[] = [];

async function connectAs(user: string): Promise<NatsConnection> {
  const nc = await connectNats({ url: cluster.url, name: `repub-test-${user}`, nkeySeedFile: cluster.seedFile(user) });
  conns.push(nc);
  return nc;
}

beforeAll(async () => {
  cluster = await startNatsCluster({ accessPrefix: PREFIX, roles: ["planner"], proxied: true });
}, 90_000);

afterAll(async () => {
  for (const c of conns) await c.close().catch(() => undefined);
  await cluster?.stop();
});

describe("a publish on a connection that moves to another node", () => {
  it("the node cut off while the ack is awaited: sent again on the next node, stored once, long before the ack timeout", async () => {
    const coordinator = await connectAs("coordinator");
    await provision(coordinator, { ...plannerProvision(PREFIX, 3), naming: n });
    const log = recordingLog();
    const publisher = createPublisher(coordinator, n, log);
    // a first publish settles the connection on its node
    await publisher.publishTask(makeTask(sessionId()));
    const on = cluster.nodes.findIndex((x) => x.name === coordinator.info?.server_name);
    expect(on).toBeGreaterThanOrEqual(0);

    cluster.partition(on, "blackhole");
    const task = makeTask(sessionId());
    const t0 = Date.now();
    const outcome = await publisher.publishTask(task).then(
      () => "acknowledged",
      (e: unknown) => `failed: ${(e as Error).message}`,
    );
    const ms = Date.now() - t0;
    cluster.heal(on);

    expect(outcome).toBe("acknowledged");
    // the client gave up the cut node after its pings (2 × 5 s) and sent again where it went
    expect(ms).toBeLessThan(JS_ACK_TIMEOUT_MS);
    expect(coordinator.info?.server_name).not.toBe(cluster.nodes[on]?.name);
    expect(log.messages("warn")).toContain("the connection moved while a publish awaited its ack; publishing again");
    // one copy of the task in the stream, whatever the first send did
    const admin = await connectAs("admin");
    // the healed node rejoins meanwhile: the test's own reads retry through its elections, and a
    // read is taken once both stored messages (the first publish and this one) came back
    let stored: StoredMsg[] = [];
    await waitFor(async () => {
      stored = await retried(() => streamMessages(admin, n.streams.tasks));
      return stored.length === 2;
    }, 30_000);
    const copies = stored.filter((m) => m.header.get(HEADERS.taskId) === task.task_id);
    expect(copies).toHaveLength(1);
    console.log(
      `[repub] the node cut off: the publish was acknowledged after ${ms} ms (ack timeout ${JS_ACK_TIMEOUT_MS} ms)`,
    );
  }, 90_000);
});
