// What the gateway's integration tests share: a run's own streams on the real NATS server, and
// their removal afterwards.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Naming } from "@agentmesh/contracts";
import { provision } from "@agentmesh/messaging";

/** Provisions `n`'s streams with short test timings (no roles: the tests publish for them). */
export async function provisionTestStreams(nc: NatsConnection, n: Naming, eventsMaxAgeMs = 60_000): Promise<void> {
  await provision(nc, {
    naming: n,
    roles: [],
    taskAckWaitMs: 1000,
    taskMaxDeliver: 3,
    inboxAckWaitMs: 1000,
    inboxMaxDeliver: 3,
    eventsMaxAgeMs,
    duplicateWindowMs: 10_000,
    maxAckPendingPerRole: 4,
  });
}

/** Deletes every stream of `n` (and its KV bucket's). */
export async function deleteTestStreams(nc: NatsConnection, n: Naming): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const s of [...Object.values(n.streams), `KV_${n.kv.cancelled}`]) await jsm.streams.delete(s).catch(() => false);
}
