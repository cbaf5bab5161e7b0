import type { Naming } from "@agentmesh/contracts";
import {
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";

/*
 * The cancelled-sessions bucket is a standard JetStream KV bucket (stream `KV_<bucket>`, keys on
 * `$KV.<bucket>.<key>`, `nats kv get <bucket> <sid>` reads it), kept with the plain JetStream
 * client: agents have no Redis, and one key per session with a TTL is all they need.
 */

const streamOf = (naming: Naming) => `KV_${naming.kv.cancelled}`;
const keyOf = (naming: Naming, sessionId: string) => `$KV.${naming.kv.cancelled}.${sessionId}`;

/** The bucket's stream settings (one value per key, expiring after `ttlMs`). */
export function cancelledBucketConfig(
  naming: Naming,
  ttlMs: number,
  replicas: number,
): Partial<StreamConfig> & { name: string; subjects: string[] } {
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
export async function markCancelled(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  reason: string,
): Promise<void> {
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

/** A local copy of the cancelled-sessions bucket, kept current by a watch, read without a round trip. */
export interface CancelledView {
  /**
   * True once the watch has applied every mark stored when it began; until then (and after
   * `stop()`) `has` could miss one, so the caller asks the bucket instead.
   */
  readonly ready: boolean;
  /** True when the session is marked here (and the mark is younger than the bucket's max age). */
  has(sessionId: string): boolean;
  /** Marks a session here at once: its cancel broadcast can arrive before the watch delivers its mark. */
  add(sessionId: string): void;
  stop(): void;
}

/** How often expired marks are dropped from a view. */
const SWEEP_MS = 60_000;

/** A view's state, shared by the view and its watches. */
interface WatchState {
  /** session id → when it was marked (ms) */
  readonly marks: Map<string, number>;
  /** The bucket's max age (0 until the first watch has read it). */
  maxAgeMs: number;
  ready: boolean;
  stopped: boolean;
  /** The current watch: a reconnect ends it and starts the next one. */
  generation: number;
  messages: ConsumerMessages | null;
}

/**
 * Watches the bucket (an ordered consumer, last value per key) into a `CancelledView`. A failure
 * to start or a broken watch leaves the view not ready, and `onError` is told; it never throws.
 * After a reconnect the watch starts over (marks stored meanwhile, whose broadcasts this process
 * may have missed, are read again) and is not ready until it has caught up.
 */
export function watchCancelled(
  nc: NatsConnection,
  naming: Naming,
  onError: (err: unknown) => void,
  now: () => number = Date.now,
): CancelledView {
  const st: WatchState = { marks: new Map(), maxAgeMs: 0, ready: false, stopped: false, generation: 0, messages: null };
  const { marks } = st;
  const alive = (at: number) => st.maxAgeMs === 0 || now() - at < st.maxAgeMs;
  const sweep = setInterval(() => {
    for (const [sid, at] of marks) if (!alive(at)) marks.delete(sid);
  }, SWEEP_MS);
  sweep.unref();

  const start = (): void => {
    const gen = ++st.generation;
    st.ready = false;
    st.messages?.stop();
    st.messages = null;
    watchOnce(nc, naming, st, gen).catch((err: unknown) => {
      if (gen !== st.generation) return;
      st.ready = false;
      if (!st.stopped) onError(err);
    });
  };
  start();
  void (async () => {
    // Marks may be stored, and their broadcasts lost, while this process is away.
    for await (const s of nc.status()) {
      if (st.stopped) return;
      if (s.type === "disconnect") st.ready = false;
      else if (s.type === "reconnect") start();
    }
  })().catch(() => undefined);

  return {
    get ready() {
      return st.ready && !st.stopped;
    },
    has(sessionId) {
      const at = marks.get(sessionId);
      return at !== undefined && alive(at);
    },
    add(sessionId) {
      marks.set(sessionId, now());
    },
    stop() {
      st.stopped = true;
      st.ready = false;
      st.generation++;
      clearInterval(sweep);
      st.messages?.stop();
    },
  };
}

/** One watch from the bucket's current marks on; ready once nothing stored before it began is still to come. */
async function watchOnce(nc: NatsConnection, naming: Naming, st: WatchState, gen: number): Promise<void> {
  const stream = streamOf(naming);
  const prefix = `$KV.${naming.kv.cancelled}.`;
  const current = () => gen === st.generation && !st.stopped;
  const info = await (await jetstreamManager(nc)).streams.info(stream);
  st.maxAgeMs = Math.floor(info.config.max_age / 1_000_000);
  const consumer = await jetstream(nc).consumers.get(stream, {
    filter_subjects: `${prefix}>`,
    deliver_policy: DeliverPolicy.LastPerSubject,
  });
  if (!current()) return;
  const msgs = await consumer.consume();
  if (!current()) {
    msgs.stop();
    return;
  }
  st.messages = msgs;
  let applied = 0;
  // Caught up: an empty bucket at once; else the message the server says has none pending
  // after it, or (should that one have expired meanwhile) a consumer with nothing pending and
  // nothing delivered that is not applied.
  if (info.state.messages === 0) st.ready = true;
  else {
    consumer.info(false).then(
      (ci) => {
        if (current() && ci.num_pending === 0 && ci.delivered.stream_seq <= applied) st.ready = true;
      },
      () => undefined,
    );
  }
  for await (const m of msgs) {
    if (!current()) break;
    const sid = m.subject.slice(prefix.length);
    const op = m.headers?.get("KV-Operation");
    if (op === "DEL" || op === "PURGE") st.marks.delete(sid);
    else st.marks.set(sid, Number(m.timestampNanos / 1_000_000n));
    applied = m.seq;
    if (m.info.pending === 0) st.ready = true;
  }
  // ended without an error: stopped, replaced after a reconnect, or the connection closed
  if (gen === st.generation) st.ready = false;
}

/** The watches of a process, one per connection and bucket. */
const watches = new WeakMap<NatsConnection, Map<string, { view: CancelledView; users: number }>>();

/**
 * The connection's one watch of the bucket, shared by every worker on it (an agent process that
 * runs several roles, `services/local`); `release()` stops it when its last user is done.
 * `onError` is the first user's.
 */
export function sharedCancelledView(
  nc: NatsConnection,
  naming: Naming,
  onError: (err: unknown) => void,
): { view: CancelledView; release(): void } {
  let byBucket = watches.get(nc);
  if (!byBucket) watches.set(nc, (byBucket = new Map()));
  const bucket = naming.kv.cancelled;
  let entry = byBucket.get(bucket);
  if (!entry) byBucket.set(bucket, (entry = { view: watchCancelled(nc, naming, onError), users: 0 }));
  entry.users++;
  const held = entry;
  let released = false;
  return {
    view: held.view,
    release() {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      held.view.stop();
      if (byBucket.get(bucket) === held) byBucket.delete(bucket);
    },
  };
}
