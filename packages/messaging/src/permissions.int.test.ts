import {
  inputIds,
  ROLE_NAMES,
  SCHEMA_VERSION,
  naming as makeNaming,
  type InboxInput,
  type Naming,
  type SessionEvent,
} from "@agentmesh/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import { PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthNats, type AuthNats } from "../../../test/setup/nats-auth.js";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { markCancelled, watchCancelled } from "./cancelled.js";
import { connectNats } from "./connect.js";
import { readStoredEvents, startEventFeed } from "./event-feed.js";
import { followEvents } from "./events.js";
import { startInboxConsumer } from "./inbox-consumer.js";
import { createMicroService } from "./micro.js";
import { SERVICE_USERS } from "./permissions.js";
import { provision } from "./provision.js";
import { createPublisher } from "./publisher.js";
import { listServices } from "./request.js";
import { makeTask, recordingLog, sessionId, waitFor } from "./test-support.js";
import { startWorker } from "./worker.js";

// Permission probes: a real nats-server with the generated config; every service user tries
// what it must not do (each attempt must end in a permission violation), and the allowed paths
// still work.

let server: AuthNats;
let n: Naming;
const conns: NatsConnection[] = [];

beforeAll(async () => {
  const prefix = uniquePrefix("perm");
  n = makeNaming(prefix);
  server = await startAuthNats(prefix);
}, 30_000);

afterAll(async () => {
  for (const c of conns) await c.close().catch(() => undefined);
  await server?.stop();
});

/** A connection as `user`, with every permission violation it causes recorded. */
async function connectAs(user: string): Promise<{ nc: NatsConnection; violations: PermissionViolationError[] }> {
  const nc = await connectNats({ url: server.url, name: `probe-${user}`, nkeySeedFile: server.seedFile(user) });
  conns.push(nc);
  const violations: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "error" && s.error instanceof PermissionViolationError) violations.push(s.error);
    }
  })();
  return { nc, violations };
}

type Probe = { readonly op: "publish" | "subscribe"; readonly subject: string };
const pub = (subject: string): Probe => ({ op: "publish", subject });
const sub = (subject: string): Probe => ({ op: "subscribe", subject });

/** Tries a probe; true when the server answered it with a permission violation. */
async function denied(c: { nc: NatsConnection; violations: PermissionViolationError[] }, p: Probe): Promise<boolean> {
  const operation = p.op === "publish" ? "publish" : "subscription";
  const seen = () => c.violations.some((v) => v.operation === operation && v.subject === p.subject);
  if (p.op === "publish") c.nc.publish(p.subject, "{}");
  else c.nc.subscribe(p.subject, { callback: () => undefined });
  await c.nc.flush();
  const end = Date.now() + 2000;
  while (!seen() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return seen();
}

const SID = "probesession0000001";

/** What every user must be refused, whoever it is. */
function common(other: string): Probe[] {
  const { tasks, inbox, events, dead } = n.streams;
  return [
    pub(`$JS.API.STREAM.DELETE.${tasks}`),
    pub(`$JS.API.STREAM.DELETE.${inbox}`),
    pub(`$JS.API.STREAM.DELETE.${events}`),
    pub(`$JS.API.STREAM.DELETE.${dead}`),
    pub(`$JS.API.STREAM.PURGE.${inbox}`),
    pub("$SYS.REQ.SERVER.PING"),
    sub("$SYS.>"),
    pub(n.rpc("executor", "execute")),
    pub(n.rpc(other, "op")),
    sub("_INBOX.>"),
    sub(n.inboxAll),
    sub(n.taskAll),
    pub(`$JS.ACK.${tasks}.role_${other}.1.1.1.1.1.0`),
    pub(`$JS.API.CONSUMER.DELETE.${inbox}.coordinator`),
  ];
}

/** The forbidden attempts of one user. */
function forbidden(user: string): Probe[] {
  const { tasks, events } = n.streams;
  const other = ROLE_NAMES.find((r) => r !== user) ?? "planner";
  const kvWrite = pub(`$KV.${n.kv.cancelled}.${SID}`);
  const asOtherRole = pub(n.inbox(SID, other));
  const consumeOther = pub(`$JS.API.CONSUMER.MSG.NEXT.${tasks}.role_${other}`);
  const createOnTasks = pub(`$JS.API.CONSUMER.CREATE.${tasks}.probe.${n.taskFilter(other)}`);
  const writeTasks = pub(n.task(other, "op"));
  const writeEvents = pub(n.events(SID));
  const readEvents = sub(n.events(SID));
  switch (user) {
    case "coordinator":
      return [
        ...common(other),
        asOtherRole,
        pub(n.inbox(SID, "client")),
        consumeOther,
        pub(`$JS.ACK.${tasks}.role_${other}.1.1.1.1.1.0`),
        pub(n.tokens(SID, other)),
        sub(n.tokensAll),
        sub(n.eventsAll),
      ];
    case "client":
    case "gateway": // a client with its own seed
      return [
        ...common(other),
        kvWrite,
        asOtherRole,
        pub(n.inbox(SID, "coordinator")),
        consumeOther,
        createOnTasks,
        writeTasks,
        writeEvents,
        readEvents,
        pub(`$JS.API.CONSUMER.CREATE.${events}`),
        pub(`$JS.API.CONSUMER.DURABLE.CREATE.${events}.probe`),
        pub(`$JS.API.CONSUMER.CREATE.${events}.probe.${n.taskAll}`),
        pub(n.cancel(SID)),
        pub(n.deadLetter(other)),
        pub(`$JS.API.STREAM.CREATE.${tasks}`),
        pub(`$JS.API.CONSUMER.LEADER.STEPDOWN.${tasks}.role_${other}`),
      ];
    case "inspect":
      return [
        ...common(other),
        kvWrite,
        asOtherRole,
        pub(n.inbox(SID, "client")),
        pub(n.inbox(SID, "coordinator")),
        pub(n.submit),
        consumeOther,
        createOnTasks,
        writeTasks,
        writeEvents,
        readEvents,
        pub(n.cancel(SID)),
        pub(`$JS.API.STREAM.MSG.DELETE.${n.streams.dead}`),
        pub(`$JS.API.CONSUMER.LEADER.STEPDOWN.${tasks}.role_${other}`),
      ];
    default:
      // a role
      return [
        ...common(other),
        kvWrite,
        asOtherRole,
        pub(n.inbox(SID, "coordinator")),
        pub(n.inbox(SID, "client")),
        consumeOther,
        createOnTasks,
        pub(`$JS.API.CONSUMER.CREATE.${tasks}.probe.${n.taskFilter(user)}`),
        pub(`$JS.API.CONSUMER.DURABLE.CREATE.${tasks}.role_${user}`),
        writeTasks,
        pub(n.task(user, "op")),
        writeEvents,
        readEvents,
        pub(n.submit),
        pub(n.cancel(SID)),
        pub(n.deadLetter(other)),
        pub(n.deadLetter("inbox")),
        // its own token deltas only: another role's text is not its to write
        pub(n.tokens(SID, other)),
        pub(`${n.tokensAll.slice(0, -1)}${SID}`),
        sub(n.task(other, ">")),
        pub(`$JS.API.STREAM.CREATE.${tasks}`),
        pub(`$JS.API.CONSUMER.LEADER.STEPDOWN.${tasks}.role_${user}`),
        pub("$SRV.PING"),
        // its health probe asks about itself only
        pub("$SRV.STATS"),
        pub("$SRV.INFO"),
        pub(`$SRV.STATS.${other}`),
        pub(`$SRV.INFO.${other}`),
      ];
  }
}

describe("permission probes against nats-server with the generated config", () => {
  const users = [...ROLE_NAMES, ...SERVICE_USERS];
  const tally: Record<string, { tried: number; denied: number }> = {};

  it.each(users)(
    "user %s: every forbidden attempt is refused (>= 12)",
    async (user) => {
      const c = await connectAs(user);
      const probes = forbidden(user);
      expect(probes.length).toBeGreaterThanOrEqual(12);
      const allowedThrough: string[] = [];
      for (const p of probes) if (!(await denied(c, p))) allowedThrough.push(`${p.op} ${p.subject}`);
      tally[user] = { tried: probes.length, denied: probes.length - allowedThrough.length };
      expect(allowedThrough).toEqual([]);
      expect(c.nc.isClosed()).toBe(false);
    },
    60_000,
  );

  it("tallies every user (each >= 12 attempts, 100 % denied)", () => {
    const total = Object.values(tally).reduce((s, t) => s + t.tried, 0);
    const refused = Object.values(tally).reduce((s, t) => s + t.denied, 0);
    console.log(
      `[permission probes] ${Object.keys(tally).length} users, ${refused}/${total} forbidden attempts denied`,
    );
    expect(Object.keys(tally).sort()).toEqual([...users].sort());
    expect(refused).toBe(total);
  });
});

describe("the allowed paths work under the generated config", () => {
  it("the coordinator provisions; a role consumes its task and answers under its sender; a client cancels and follows events; inspect reads", async () => {
    const coord = await connectAs("coordinator");
    const planner = await connectAs("planner");
    const client = await connectAs("client");
    const inspect = await connectAs("inspect");
    await provision(coord.nc, {
      naming: n,
      roles: ROLE_NAMES,
      taskAckWaitMs: 2000,
      taskMaxDeliver: 3,
      inboxAckWaitMs: 2000,
      inboxMaxDeliver: 5,
      eventsMaxAgeMs: 60_000,
      duplicateWindowMs: 10_000,
      maxAckPendingPerRole: 16,
    });
    // provisioning twice (a second coordinator) is allowed too
    await provision(coord.nc, {
      naming: n,
      roles: ROLE_NAMES,
      taskAckWaitMs: 2000,
      taskMaxDeliver: 3,
      inboxAckWaitMs: 2000,
      inboxMaxDeliver: 5,
      eventsMaxAgeMs: 60_000,
      duplicateWindowMs: 10_000,
      maxAckPendingPerRole: 16,
    });

    const got: InboxInput[] = [];
    const inboxConsumer = await startInboxConsumer(coord.nc, {
      naming: n,
      concurrency: 2,
      ackWaitMs: 2000,
      log: recordingLog(),
      handler: async (i) => (got.push(i), "ack"),
    });
    const worker = await startWorker(planner.nc, {
      naming: n,
      role: "planner",
      concurrency: 1,
      ackWaitMs: 2000,
      maxDeliver: 3,
      log: recordingLog(),
      handler: async () => ({ ok: true, output: { plan: [] }, provenance: null }) as never,
    });
    const micro = await createMicroService(planner.nc, {
      name: "planner",
      version: "0.0.1",
      metadata: { prefix: n.prefix },
      statsData: () => ({ ...worker.stats, alive: worker.alive() }),
    });
    // as an agent without direct rpc: one read-only status endpoint carries the work counts
    await micro.addEndpoint("status", n.rpc("planner", "status"), async () => ({
      ...worker.stats,
      alive: worker.alive(),
    }));
    try {
      const sid = sessionId();
      await createPublisher(coord.nc, n, recordingLog()).publishTask(makeTask(sid));
      await waitFor(() => got.some((i) => i.kind === "result"), 10_000, "the planner's result reaches the coordinator");
      expect(got.find((i) => i.kind === "result")).toMatchObject({ role: "planner", session_id: sid });
      expect(inboxConsumer.stats.forged).toBe(0);
      // an agent watches the cancelled-sessions bucket (an ordered consumer on its stream) and
      // receives a mark the coordinator stores
      await markCancelled(coord.nc, n, sid, "probe");
      const watchErrors: unknown[] = [];
      const view = watchCancelled(planner.nc, n, (e) => watchErrors.push(e));
      await waitFor(
        () => (view.ready && view.has(sid)) || watchErrors.length > 0,
        10_000,
        "the planner's watch of the cancelled bucket",
      );
      expect(watchErrors).toEqual([]);
      view.stop();

      await createPublisher(client.nc, n, recordingLog(), { client: true }).publishInbox({
        v: SCHEMA_VERSION,
        kind: "cancel",
        session_id: sid,
        input_id: inputIds.cancel(`${sid}-probe`),
        reason: "probe",
      });
      await waitFor(() => got.some((i) => i.kind === "cancel"), 10_000, "the client's cancel reaches the coordinator");

      const event: SessionEvent = {
        v: SCHEMA_VERSION,
        session_id: sid,
        version: 1,
        index: 0,
        timestamp: Date.now(),
        type: "stage",
        name: "probe",
        description: "d",
        status: "running",
      };
      await createPublisher(coord.nc, n, recordingLog()).publishEvent(event);
      const ac = new AbortController();
      const seen: SessionEvent[] = [];
      for await (const e of followEvents(client.nc, n, sid, { signal: ac.signal })) {
        seen.push(e);
        ac.abort();
      }
      expect(seen).toEqual([event]);
      // a gateway's replay (direct gets) and its one feed of every session's events
      // a role stores its token deltas (JetStream, acknowledged) on its own role's subject
      await createPublisher(planner.nc, n, recordingLog()).publishTokens({
        v: SCHEMA_VERSION,
        type: "token",
        session_id: sid,
        version: 1,
        index: 0,
        timestamp: Date.now(),
        task_id: `${sid}.1.0.0`,
        role: "planner",
        op: "plan",
        attempt: 0,
        seq: 0,
        offset: 0,
        delta: "Hi",
      });
      const replayed: string[] = [];
      for await (const b of readStoredEvents(client.nc, n, sid, 1, undefined, { tokens: true }))
        replayed.push(b.kind === "events" ? `events ${b.events.length}` : `token ${b.token.delta}`);
      expect(replayed).toEqual(["events 1", "token Hi"]);
      const fed: string[] = [];
      const feed = await startEventFeed(client.nc, n, {
        message: (m) => {
          const b = m.read();
          fed.push(`${m.sessionId}:${b?.kind === "events" ? b.events.length : b?.kind}`);
        },
        failed: (err) => fed.push(`failed: ${String(err)}`),
      });
      await createPublisher(coord.nc, n, recordingLog()).publishEvent({ ...event, version: 2 });
      await waitFor(() => fed.length > 0, 5000, "the feed's first event");
      await feed.stop();
      expect(fed).toEqual([`${sid}:1`]);

      const services = await listServices(client.nc, 800);
      expect(
        services.find((s) => s.info.name === "planner" && s.info.metadata?.prefix === n.prefix)?.stats?.endpoints[0]
          ?.data,
      ).toMatchObject({ alive: true });
      // the planner's own health probe (`agentmesh health --service planner` in its pod, with its seed)
      const own = await listServices(planner.nc, 800, "planner");
      expect(own.find((s) => s.info.metadata?.prefix === n.prefix)?.stats?.endpoints[0]?.data).toMatchObject({
        alive: true,
      });
      // the hand-over after a consumer's replicas grew: on a single server the request reaches
      // JetStream, which answers that the consumer is not clustered
      const stepDown = await coord.nc.request(
        `$JS.API.CONSUMER.LEADER.STEPDOWN.${n.streams.tasks}.${n.consumers.role("planner")}`,
        "",
        { timeout: 5000 },
      );
      expect(stepDown.json()).toMatchObject({ type: "io.nats.jetstream.api.v1.consumer_leader_stepdown_response" });
      const info = await (await jetstreamManager(inspect.nc)).streams.info(n.streams.tasks);
      expect(info.config.name).toBe(n.streams.tasks);

      for (const c of [coord, planner, client, inspect])
        expect(c.violations.map((v) => `${v.operation} ${v.subject}`)).toEqual([]);
    } finally {
      await micro.stop();
      await worker.stop(200);
      await inboxConsumer.stop(200);
    }
  }, 60_000);
});
