import { isDeepStrictEqual } from "node:util";
import { AgentmeshError } from "@agentmesh/contracts";
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { cancelledBucketConfig } from "./cancelled.js";
import { NO_SUITABLE_PEERS, natsFailure, retryTransient } from "./errors.js";
import type { ProvisionOptions } from "./types.js";

/** JetStream API error codes we branch on. */
const API = {
  streamNotFound: 10059,
  streamNameInUse: 10058,
  /**
   * A create racing another create of the same stream can see its subjects taken before it sees
   * the name (nats-server 2.9 checks the name, then the subjects): about 1 in 200 races here.
   */
  streamSubjectOverlap: 10065,
  consumerNotFound: 10014,
  /** 2.10+ answers a create for an existing consumer with a different config with this. */
  consumerAlreadyExists: 10148,
} as const;

const DAY_MS = 24 * 60 * 60 * 1000;

function apiCode(err: unknown): number | null {
  return err instanceof JetStreamApiError ? err.code : null;
}

type StreamSpec = Partial<StreamConfig> & { name: string; subjects: string[] };

/**
 * Whether every field we set already has that value on the server (which adds defaults of its
 * own): then a restart leaves the stream or consumer as it is instead of writing it again.
 */
function holds(have: object, want: object): boolean {
  return Object.entries(want).every(([k, v]) => isDeepStrictEqual((have as Record<string, unknown>)[k], v));
}

/** Creates the stream, or brings an existing one to `cfg` (safe when another process races us). */
export async function ensureStream(jsm: Pick<JetStreamManager, "streams">, cfg: StreamSpec): Promise<void> {
  try {
    const info = await jsm.streams.info(cfg.name);
    if (holds(info.config, cfg)) return;
  } catch (err) {
    if (apiCode(err) !== API.streamNotFound) throw err;
    try {
      await jsm.streams.add(cfg);
      return;
    } catch (addErr) {
      const code = apiCode(addErr);
      if (code === API.streamSubjectOverlap) {
        // Another process's create of this stream won the race, or another stream really holds
        // these subjects: only the first has our stream's name now.
        const raced = await jsm.streams.info(cfg.name).catch((infoErr: unknown) => {
          // only "not found" means the subjects are someone else's; any other failure is its own error
          if (apiCode(infoErr) === API.streamNotFound) return null;
          throw infoErr;
        });
        if (raced === null) throw addErr;
        if (holds(raced.config, cfg)) return;
      } else if (code !== API.streamNameInUse) {
        // streamNameInUse: another process created it first, with settings that differ from ours
        throw addErr;
      }
    }
  }
  const { name, retention: _r, storage: _s, ...mutable } = cfg;
  await jsm.streams.update(name, mutable);
}

/** Waits for every one of them (none is left running behind a failure), then throws the first failure. */
async function settleAll(work: readonly Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

/**
 * Creates the consumer or brings an existing one to `cfg`; true when it existed with another
 * replica count (2.9 upserts on add; 2.10+ refuses a differing config with 10148, so we update instead).
 */
async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  cfg: Partial<ConsumerConfig> & { durable_name: string },
): Promise<boolean> {
  // an info is a lookup; an add of an existing consumer makes the server check and store it again
  let had: Partial<ConsumerConfig> | null = null;
  try {
    had = (await jsm.consumers.info(stream, cfg.durable_name)).config;
    if (holds(had, cfg)) return false;
  } catch (err) {
    if (apiCode(err) !== API.consumerNotFound) throw err;
  }
  try {
    await jsm.consumers.add(stream, cfg);
  } catch (err) {
    if (apiCode(err) !== API.consumerAlreadyExists) throw err;
    const { durable_name, deliver_policy: _d, ack_policy: _a, ...mutable } = cfg;
    await jsm.consumers.update(stream, durable_name, mutable);
  }
  return had !== null && (had.num_replicas ?? 0) !== cfg.num_replicas;
}

/** Whether a stream's or consumer's cluster report holds `replicas` peers: a leader and every follower current. */
export function replicasCurrent(
  cluster: { leader?: string; replicas?: Array<{ current: boolean }> } | undefined,
  replicas: number,
): boolean {
  if (!cluster?.leader) return false;
  const followers = cluster.replicas ?? [];
  return followers.length === replicas - 1 && followers.every((r) => r.current);
}

/** How long a consumer whose replica count changed is given to bring its new replicas up to date. */
const HANDOVER_WAIT_MS = 30_000;

/**
 * After a consumer's replica count grew, hands its leadership to one of its new replicas once
 * they are current. On nats-server 2.9 the replicas a consumer gains this way can fail to elect a
 * leader among themselves when the node that led it dies (its stream elects one; the consumer
 * keeps naming the dead node), so the first election happens now, while every node is up. Best
 * effort: a consumer still catching up after the wait, or a refused step-down, is left as it is
 * (docs/nats-cluster.md, "Moving a deployment from R1 to R3").
 */
async function handOver(
  nc: NatsConnection,
  jsm: JetStreamManager,
  stream: string,
  durable: string,
  replicas: number,
): Promise<void> {
  const until = Date.now() + HANDOVER_WAIT_MS;
  for (;;) {
    if (replicasCurrent((await jsm.consumers.info(stream, durable).catch(() => null))?.cluster, replicas)) break;
    if (Date.now() >= until) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  await nc.request(`$JS.API.CONSUMER.LEADER.STEPDOWN.${stream}.${durable}`, "", { timeout: 5000 }).catch(() => null);
}

/**
 * Creates or updates the INBOX, TASKS, EVENTS and DEAD streams, the cancelled-sessions KV bucket
 * and the durable pull consumers (`coordinator` on INBOX, one per role on TASKS). Idempotent; two
 * processes may run it at once, on one server or on any nodes of a cluster. A failure a cluster
 * shows while a node restarts or elects a leader is retried (each step is idempotent) until
 * `retryForMs` has passed; a refusal (bad settings, replicas on a single server) fails at once.
 */
export async function provision(nc: NatsConnection, o: ProvisionOptions): Promise<void> {
  try {
    await retryTransient(() => provisionOnce(nc, o), o.retryForMs ?? 60_000);
  } catch (err) {
    const cause = err instanceof AgentmeshError ? err.cause : err;
    if (cause instanceof JetStreamApiError && cause.code === NO_SUITABLE_PEERS)
      throw new AgentmeshError(
        "unavailable",
        `provisioning JetStream for prefix ${o.naming.prefix} at ${o.replicas ?? 1} replicas failed: fewer JetStream nodes are up than replicas (${cause.message})`,
        { component: "nats", cause },
      );
    throw err;
  }
}

async function provisionOnce(nc: NatsConnection, o: ProvisionOptions): Promise<void> {
  const n = o.naming;
  const replicas = o.replicas ?? 1;
  checkSettings(o);
  const streams = streamSpecs(o, replicas);
  try {
    const jsm = await jetstreamManager(nc);
    // the streams are independent of each other, and so are the consumers once their streams
    // exist: each group goes out at once instead of ~30 API round trips one after another
    await settleAll(
      [...streams, cancelledBucketConfig(n, o.cancelledTtlMs ?? DAY_MS, replicas)].map((s) => ensureStream(jsm, s)),
    );
    const rescaled: Array<[string, string]> = [];
    await settleAll(
      consumerSpecs(o, replicas).map(async ([stream, cfg]) => {
        if (await ensureConsumer(jsm, stream, cfg)) rescaled.push([stream, cfg.durable_name]);
      }),
    );
    if (replicas > 1) await Promise.all(rescaled.map(([s, d]) => handOver(nc, jsm, s, d, replicas)));
  } catch (err) {
    throw natsFailure(err, `provisioning JetStream for prefix ${n.prefix} failed`);
  }
}

/** Refuses durations the server would refuse (or that would make no sense) before anything is sent. */
function checkSettings(o: ProvisionOptions): void {
  for (const [k, v] of Object.entries({
    taskAckWaitMs: o.taskAckWaitMs,
    inboxAckWaitMs: o.inboxAckWaitMs,
    eventsMaxAgeMs: o.eventsMaxAgeMs,
    duplicateWindowMs: o.duplicateWindowMs,
    cancelledTtlMs: o.cancelledTtlMs ?? DAY_MS,
  })) {
    if (!(v > 0)) throw new AgentmeshError("internal", `provision: ${k} must be positive, got ${v}`);
  }
  if (o.duplicateWindowMs > o.eventsMaxAgeMs) {
    throw new AgentmeshError(
      "internal",
      "provision: duplicateWindowMs must not exceed eventsMaxAgeMs (the server refuses it)",
    );
  }
}

/** The INBOX, TASKS, EVENTS and DEAD streams' settings. */
function streamSpecs(o: ProvisionOptions, replicas: number): StreamSpec[] {
  const n = o.naming;
  const dup = nanos(o.duplicateWindowMs);
  const workQueue = {
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
    discard: DiscardPolicy.Old,
  };
  return [
    { name: n.streams.inbox, subjects: [n.inboxAll], ...workQueue, duplicate_window: dup },
    { name: n.streams.tasks, subjects: [n.taskAll], ...workQueue, duplicate_window: dup },
    {
      name: n.streams.events,
      // the lifecycle events and the token deltas, in one order: a position names a place in both
      subjects: [n.eventsAll, n.tokensAll],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: replicas,
      max_age: nanos(o.eventsMaxAgeMs),
      duplicate_window: dup,
      // replays read a session's messages by direct get (no consumer per reader): docs/events.md
      allow_direct: true,
    },
    {
      name: n.streams.dead,
      // naming has no "all dead letters" subject; deadLetter(">") is the wildcard over roles
      subjects: [n.deadLetter(">")],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: replicas,
      max_age: nanos(o.deadMaxAgeMs ?? 7 * DAY_MS),
      duplicate_window: nanos(Math.min(o.duplicateWindowMs, o.deadMaxAgeMs ?? 7 * DAY_MS)),
    },
  ];
}

type Durable = Partial<ConsumerConfig> & { durable_name: string };

/** The durable pull consumers, each with its stream: `coordinator` on INBOX, one per role on TASKS. */
function consumerSpecs(o: ProvisionOptions, replicas: number): Array<[string, Durable]> {
  const n = o.naming;
  // replicas set on each consumer, not left to follow the stream, so a change of replicas shows
  // in the consumer's own config and provisioning knows to hand its leadership over (`handOver`)
  const pull = { ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, num_replicas: replicas };
  return [
    [
      n.streams.inbox,
      {
        ...pull,
        durable_name: n.consumers.coordinator,
        filter_subject: n.inboxAll,
        ack_wait: nanos(o.inboxAckWaitMs),
        max_deliver: o.inboxMaxDeliver,
        max_ack_pending: o.inboxMaxAckPending ?? 1000,
      },
    ],
    ...o.roles.map((role): [string, Durable] => [
      n.streams.tasks,
      {
        ...pull,
        durable_name: n.consumers.role(role),
        filter_subject: n.taskFilter(role),
        ack_wait: nanos(o.taskAckWaitMs),
        max_deliver: o.taskMaxDeliver,
        max_ack_pending: o.maxAckPendingPerRole,
      },
    ]),
  ];
}
