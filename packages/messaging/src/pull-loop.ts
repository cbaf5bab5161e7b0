import { AgentmeshError } from "@agentmesh/contracts";
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  type Consumer,
  type ConsumerInfo,
  type ConsumerMessages,
  type JsMsg,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { natsFailure, retryTransient } from "./errors.js";
import type { Log } from "./log.js";

/**
 * Looks up a provisioned durable consumer and its info; a missing one is `unavailable`
 * (provisioning may still be under way). A process starting while a cluster node restarts waits
 * out the failover (up to a minute) instead of failing.
 */
export async function getDurable(
  nc: NatsConnection,
  stream: string,
  durable: string,
): Promise<{ consumer: Consumer; info: ConsumerInfo }> {
  try {
    return await retryTransient(async () => {
      const consumer = await jetstream(nc).consumers.get(stream, durable);
      return { consumer, info: await consumer.info(true) };
    }, 60_000);
  } catch (err) {
    if (
      err instanceof JetStreamApiError &&
      (err.code === JetStreamApiCodes.ConsumerNotFound || err.code === JetStreamApiCodes.StreamNotFound)
    ) {
      throw new AgentmeshError(
        "unavailable",
        `JetStream consumer ${durable} on stream ${stream} does not exist (yet): streams and consumers are provisioned by the coordinator at start-up`,
        {
          component: "nats",
          cause: err,
        },
      );
    }
    throw natsFailure(err, `cannot look up consumer ${durable} on ${stream}`);
  }
}

/** One message being worked on. */
export interface InFlight {
  readonly msg: JsMsg;
  /** Aborted by stop() once the grace period is over (handlers may add other reasons). */
  readonly controller: AbortController;
  /** Set once the message was acked, nak'd or termed, so no second settlement is attempted. */
  settled: boolean;
}

/** A running consume loop. */
export interface PullLoop {
  alive(): boolean;
  inFlight(): number;
  stop(graceMs: number): Promise<void>;
}

export interface PullLoopOptions {
  readonly nc: NatsConnection;
  readonly consumer: Consumer;
  readonly concurrency: number;
  /** working() interval while a message is in flight, so its lease does not expire. */
  readonly heartbeatMs: number;
  readonly log: Log;
  /** Log context (stream, consumer). */
  readonly what: Record<string, string>;
  /** Must settle the message; a throw is logged and the message left to redelivery. */
  handle(entry: InFlight): Promise<void>;
  /** How long one pull may stay open before the loop ends it and pulls again (default `PULL_DEADLINE_MS`). */
  readonly pullDeadlineMs?: number;
}

/** Reason given to handlers aborted by stop(). */
export const SHUTDOWN = Symbol("shutdown");

/** How long one pull waits for messages; an idle loop re-pulls this often. */
const FETCH_EXPIRES_MS = 5000;
/** Server heartbeats during a pull, so a dead connection ends it early. */
const FETCH_HEARTBEAT_MS = 1000;
/**
 * A pull the server has not ended this long after its expiry is ended by the loop. The server
 * ends each pull at its expiry; one whose end never comes (lost while the consumer's leadership
 * moved between nodes, with heartbeats still arriving) would otherwise hold the loop for ever.
 */
export const PULL_DEADLINE_MS = FETCH_EXPIRES_MS + 5000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A loop's state, shared by its parts. */
interface LoopState {
  /** each message's handling → the message */
  readonly inflight: Map<Promise<void>, InFlight>;
  stopping: boolean;
  /** A pull is open (false after a failed fetch until the next one succeeds). */
  running: boolean;
  current: ConsumerMessages | null;
  /** Resolves once stop() was called, ending any wait at once. */
  readonly woken: Promise<void>;
}

/**
 * Consumes a durable pull consumer with at most `concurrency` messages in flight: each pull asks
 * for the free slots only, so every delivered message is being worked (and heartbeated) at
 * once. Missed heartbeats end the pull and a new one is sent.
 */
export function startPullLoop(o: PullLoopOptions): PullLoop {
  let wake: () => void = () => undefined;
  const woken = new Promise<void>((r) => (wake = r));
  const st: LoopState = { inflight: new Map(), stopping: false, running: false, current: null, woken };
  const { inflight } = st;

  const loop = (async () => {
    while (!st.stopping && !o.nc.isClosed()) {
      while (inflight.size >= o.concurrency && !st.stopping) await Promise.race([...inflight.keys(), woken]);
      if (st.stopping) break;
      await pullOnce(o, st);
    }
    st.running = false;
  })();

  return {
    alive: () => st.running && !st.stopping && !o.nc.isClosed(),
    inFlight: () => inflight.size,
    async stop(graceMs) {
      if (st.stopping) return;
      st.stopping = true;
      wake();
      st.current?.stop();
      let t: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inflight.keys()]),
        new Promise<void>((r) => (t = setTimeout(r, graceMs))),
      ]);
      clearTimeout(t);
      for (const entry of inflight.values()) {
        entry.controller.abort(SHUTDOWN);
        if (!entry.settled) {
          entry.settled = true;
          // shutdown, not failure: immediate redelivery to a live replica is what we want
          entry.msg.nak();
        }
      }
      await loop;
    },
  };
}

/** One pull for the free slots: each delivered message is started at once (or handed back when stopping). */
async function pullOnce(o: PullLoopOptions, st: LoopState): Promise<void> {
  let messages: ConsumerMessages;
  try {
    // Ask for exactly the free slots: a message delivered to us is started at once and
    // heartbeated from then on, so none waits unleased in a client buffer past ack_wait.
    messages = await o.consumer.fetch({
      max_messages: o.concurrency - st.inflight.size,
      expires: FETCH_EXPIRES_MS,
      idle_heartbeat: FETCH_HEARTBEAT_MS,
    });
  } catch (err) {
    st.running = false;
    o.log.error({ ...o.what, err }, "cannot fetch; retrying in 1 s");
    await Promise.race([sleep(1000), st.woken]);
    return;
  }
  st.current = messages;
  st.running = true;
  watchPull(o, messages);
  const pulled = messages;
  const deadline = setTimeout(() => {
    o.log.warn({ ...o.what }, "a pull outlived its expiry; pulling again");
    pulled.stop();
  }, o.pullDeadlineMs ?? PULL_DEADLINE_MS);
  try {
    for await (const m of messages) {
      if (st.stopping) {
        // already fetched but never started: hand it back for immediate redelivery elsewhere
        m.nak();
        continue;
      }
      track(o, st.inflight, m);
    }
  } catch (err) {
    o.log.warn({ ...o.what, err }, "fetch failed");
    if (!st.stopping && !o.nc.isClosed()) await Promise.race([sleep(250), st.woken]);
  }
  clearTimeout(deadline);
  // ends the pull's status listener too (a no-op when the pull already finished)
  messages.stop();
  st.current = null;
}

/** Starts handling one message, heartbeating it until its handling ends. */
function track(o: PullLoopOptions, inflight: LoopState["inflight"], m: JsMsg): void {
  const entry: InFlight = { msg: m, controller: new AbortController(), settled: false };
  const hb = setInterval(() => {
    if (!entry.settled) m.working();
  }, o.heartbeatMs);
  const p: Promise<void> = o
    .handle(entry)
    .catch((err: unknown) =>
      o.log.error({ ...o.what, err, seq: m.seq }, "message handler failed; leaving it to redelivery"),
    )
    .finally(() => {
      clearInterval(hb);
      inflight.delete(p);
    });
  inflight.set(p, entry);
}

/** Ends a pull whose heartbeats are missed; logs a consumer or stream that is gone. */
function watchPull(o: PullLoopOptions, messages: ConsumerMessages): void {
  void (async () => {
    for await (const s of messages.status()) {
      if (s.type === "heartbeats_missed") {
        o.log.warn({ ...o.what, count: s.count }, "JetStream heartbeats missed; pulling again");
        messages.stop();
        return;
      }
      if (s.type === "consumer_deleted" || s.type === "consumer_not_found" || s.type === "stream_not_found") {
        o.log.error({ ...o.what, status: s.type }, "JetStream consumer or stream is gone; is provisioning done?");
      }
    }
  })().catch(() => undefined);
}
