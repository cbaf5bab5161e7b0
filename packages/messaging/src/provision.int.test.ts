import { naming as makeNaming } from "@agentmesh/contracts";
import { AckPolicy, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { connectNats } from "./connect.js";
import { provision } from "./provision.js";
import { connectTest, dropStreams } from "./test-support.js";
import type { ProvisionOptions } from "./types.js";

let nc: NatsConnection;
let nc2: NatsConnection;
beforeAll(async () => {
  nc = await connectTest("messaging-provision-a");
  nc2 = await connectTest("messaging-provision-b");
});
afterAll(async () => {
  await nc.drain();
  await nc2.drain();
});

function options(prefix: string, over: Partial<ProvisionOptions> = {}): ProvisionOptions {
  return {
    naming: makeNaming(prefix),
    roles: ["planner", "critic", "researcher"],
    taskAckWaitMs: 60_000,
    taskMaxDeliver: 5,
    inboxAckWaitMs: 30_000,
    inboxMaxDeliver: 20,
    eventsMaxAgeMs: 3_600_000,
    duplicateWindowMs: 120_000,
    maxAckPendingPerRole: 32,
    ...over,
  };
}

async function check(o: ProvisionOptions): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const n = o.naming;
  const inbox = await jsm.streams.info(n.streams.inbox);
  expect(inbox.config).toMatchObject({
    subjects: [n.inboxAll],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(o.duplicateWindowMs),
  });
  const tasks = await jsm.streams.info(n.streams.tasks);
  expect(tasks.config).toMatchObject({
    subjects: [n.taskAll],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
  });
  const events = await jsm.streams.info(n.streams.events);
  expect(events.config).toMatchObject({
    subjects: [n.eventsAll, n.tokensAll],
    retention: RetentionPolicy.Limits,
    max_age: nanos(o.eventsMaxAgeMs),
    allow_direct: true,
  });
  // a standard KV bucket (`nats kv get`), one value per session, expiring after a day by default
  const kv = await jsm.streams.info(`KV_${n.kv.cancelled}`);
  expect(kv.config).toMatchObject({
    subjects: [`$KV.${n.kv.cancelled}.>`],
    max_msgs_per_subject: 1,
    max_age: nanos(o.cancelledTtlMs ?? 24 * 3600 * 1000),
    allow_direct: true,
  });
  const dead = await jsm.streams.info(n.streams.dead);
  expect(dead.config).toMatchObject({ subjects: [`${n.prefix}.dead.>`], retention: RetentionPolicy.Limits });

  const coord = await jsm.consumers.info(n.streams.inbox, n.consumers.coordinator);
  expect(coord.config).toMatchObject({
    durable_name: "coordinator",
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(o.inboxAckWaitMs),
    max_deliver: o.inboxMaxDeliver,
  });
  expect(coord.config.deliver_subject).toBeUndefined();
  for (const role of o.roles) {
    const c = await jsm.consumers.info(n.streams.tasks, n.consumers.role(role));
    expect(c.config).toMatchObject({
      durable_name: `role_${role}`,
      filter_subject: n.taskFilter(role),
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(o.taskAckWaitMs),
      max_deliver: o.taskMaxDeliver,
      max_ack_pending: o.maxAckPendingPerRole,
    });
    expect(c.config.backoff).toBeUndefined();
  }
}

describe("provision", () => {
  it("creates streams and consumers, and a second run succeeds and changes nothing", async () => {
    const o = options(uniquePrefix("prov"));
    try {
      await provision(nc, o);
      await check(o);
      await provision(nc, o);
      await check(o);
    } finally {
      await dropStreams(nc, o.naming);
    }
  });

  it("succeeds when two processes provision at the same time", async () => {
    const o = options(uniquePrefix("prov"));
    try {
      await Promise.all([provision(nc, o), provision(nc2, o), provision(nc, o)]);
      await check(o);
    } finally {
      await dropStreams(nc, o.naming);
    }
  });

  it("succeeds however the racing creates interleave (the server may call the loser's subjects taken)", async () => {
    // nats-server 2.9 answered about 1 in 200 racing creates with "subjects overlap" (10065)
    // instead of "name in use"; 200 fresh races of every stream bring that case up in most runs (4 runs of 4 failed without the fix)
    for (let i = 0; i < 200; i++) {
      const o = options(uniquePrefix("race"));
      try {
        await Promise.all([provision(nc, o), provision(nc2, o)]);
      } finally {
        await dropStreams(nc, o.naming);
      }
    }
  });

  it("updates changed settings in place (ack_wait, max_deliver, max_age, new roles)", async () => {
    const prefix = uniquePrefix("prov");
    const first = options(prefix, { roles: ["planner"] });
    const second = options(prefix, {
      roles: ["planner", "expert"],
      taskAckWaitMs: 90_000,
      taskMaxDeliver: 7,
      eventsMaxAgeMs: 7_200_000,
    });
    try {
      await provision(nc, first);
      await provision(nc, second);
      await check(second);
    } finally {
      await dropStreams(nc, first.naming);
    }
  });

  it("allows direct gets on an events stream an earlier release made without them", async () => {
    const o = options(uniquePrefix("prov"));
    try {
      await provision(nc, o);
      const jsm = await jetstreamManager(nc);
      const { name, subjects, max_age } = (await jsm.streams.info(o.naming.streams.events)).config;
      await jsm.streams.update(name, { subjects, max_age, allow_direct: false });
      expect((await jsm.streams.info(name)).config.allow_direct).toBe(false);
      await provision(nc, o);
      await check(o);
    } finally {
      await dropStreams(nc, o.naming);
    }
  });

  it("adds the token subjects to an events stream an earlier release made with its events only", async () => {
    const o = options(uniquePrefix("prov"));
    try {
      await provision(nc, o);
      const jsm = await jetstreamManager(nc);
      const { name, max_age } = (await jsm.streams.info(o.naming.streams.events)).config;
      await jsm.streams.update(name, { subjects: [o.naming.eventsAll], max_age });
      await provision(nc, o);
      await check(o);
      expect((await jsm.streams.info(name)).config.subjects).toEqual([o.naming.eventsAll, o.naming.tokensAll]);
    } finally {
      await dropStreams(nc, o.naming);
    }
  });

  it("fails with a clear error when the options are impossible", async () => {
    const o = options(uniquePrefix("prov"), { duplicateWindowMs: 10_000_000, eventsMaxAgeMs: 1000 });
    await expect(provision(nc, o)).rejects.toThrow(/duplicateWindowMs/);
  });
});

describe("connectNats", () => {
  it("fails fast with `unavailable` naming the URL when nothing listens", async () => {
    const t0 = Date.now();
    const err = await connectNats({ url: "nats://agent:s3cret@127.0.0.1:1", name: "nobody" }).catch((e: unknown) => e);
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(err).toMatchObject({ name: "AgentmeshError", code: "unavailable" });
    expect((err as Error).message).toContain("cannot reach NATS at nats://agent:***@127.0.0.1:1");
    expect((err as Error).message).not.toContain("s3cret");
  });
});
