import type { Naming } from "@agentmesh/contracts";
import { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";

/*
 * The cancelled-sessions bucket is a standard JetStream KV bucket (stream `KV_<bucket>`, keys on
 * `$KV.<bucket>.<key>`, `nats kv get <bucket> <sid>` reads it), kept with the plain JetStream
 * client: agents have no Redis, and one key per session with a TTL is all they need.
 */

const streamOf = (naming: Naming) => `KV_${naming.kv.cancelled}`;
const keyOf = (naming: Naming, sessionId: string) => `$KV.${naming.kv.cancelled}.${sessionId}`;

/** The bucket's stream settings (one value per key, expiring after `ttlMs`). */
export function cancelledBucketConfig(naming: Naming, ttlMs: number, replicas: number): Partial<StreamConfig> & { name: string; subjects: string[] } {
  return {
    name: streamOf(naming),
    subjects: [`$KV.${naming.kv.cancelled}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    max_msgs_per_subject: 1,
    max_age: nanos(ttlMs),
    discard: DiscardPolicy.New,
    allow_rollup_hdrs: true,
    deny_delete: true,
    allow_direct: true,
  };
}

/** Records that a session was cancelled (or ended): its queued tasks are reported, not worked. */
export async function markCancelled(nc: NatsConnection, naming: Naming, sessionId: string, reason: string): Promise<void> {
  await jetstream(nc).publish(keyOf(naming, sessionId), new TextEncoder().encode(reason.slice(0, 500)));
}

/** Reads the bucket: true when the session was marked (and the mark has not expired). */
export function cancelledChecker(nc: NatsConnection, naming: Naming): (sessionId: string) => Promise<boolean> {
  let jsm: JetStreamManager | null = null;
  return async (sessionId) => {
    jsm ??= await jetstreamManager(nc);
    const m = await jsm.streams.getMessage(streamOf(naming), { last_by_subj: keyOf(naming, sessionId) });
    if (!m) return false;
    // a KV delete or purge leaves a marker message, which means "not cancelled"
    const op = m.header?.get("KV-Operation");
    return op !== "DEL" && op !== "PURGE";
  };
}
