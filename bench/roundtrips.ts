import { performance } from "node:perf_hooks";
import {
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import type { SessionState } from "@agentmesh/contracts";
import { createRedisSessionStore, type SessionStore } from "@agentmesh/session-store";
import { testCommit, testSessionState } from "@agentmesh/session-store/testing";
import { natsConnect, type BenchNats } from "./nats.js";
import { summarize, type Summary } from "./stats.js";

/** Sequential round trips against the servers the cluster uses, in ms. */
export interface RoundTrips {
  /** Core NATS request → trivial echo responder on another connection → reply. */
  readonly nats_request: Summary;
  /** JetStream publish of a ~0.5 KB message with a msg id to a file-store stream, until its ack. */
  readonly js_publish_ack: Summary;
  /** The session store's `commit()`: the one compare-and-set script of a transition (EVALSHA). */
  readonly redis_cas: Summary;
  /** The session store's `load()` (state + outbox), which precedes every CAS. */
  readonly redis_load: Summary;
  /** Redis PING: the floor of any Redis round trip. */
  readonly redis_ping: Summary;
}

/** Samples taken while sessions run, one probe every `intervalMs`. */
export interface LoadProbe {
  readonly nats_request: Summary;
  readonly redis_cas: Summary;
  /** The samples themselves (ms), to pool the rounds of a level. */
  readonly samples: { readonly nats_request: readonly number[]; readonly redis_cas: readonly number[] };
}

const PAYLOAD = new TextEncoder().encode(JSON.stringify({ v: 1, pad: "x".repeat(480) }));

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/**
 * A throwaway echo service, JetStream stream and session-store session under the run's prefix
 * (subjects `<p>.rtt.echo` and `<p>.rttjs.>`, keys `<p>rtt:*`), disjoint from the cluster's.
 */
export class RoundTripLab {
  private responder!: NatsConnection;
  private echo!: Subscription;
  private js!: JetStreamClient;
  private jsm!: JetStreamManager;
  private store!: SessionStore;
  private state!: SessionState;
  private seq = 0;
  private readonly echoSubject: string;
  private readonly jsSubject: string;
  private readonly stream: string;
  private readonly keyPrefix: string;
  private readonly sid = "rttsession000001";

  constructor(
    private readonly nc: NatsConnection,
    private readonly redis: Redis,
    private readonly natsTarget: BenchNats,
    private readonly prefix: string,
  ) {
    this.echoSubject = `${prefix}.rtt.echo`;
    this.jsSubject = `${prefix}.rttjs.x`;
    this.stream = `${prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_RTT`;
    this.keyPrefix = `${prefix}rtt`;
  }

  async open(): Promise<void> {
    this.responder = await natsConnect(this.natsTarget, "bench-echo");
    this.echo = this.responder.subscribe(this.echoSubject, {
      callback: (err, m) => {
        if (!err) m.respond(m.data);
      },
    });
    await this.responder.flush();
    this.jsm = await jetstreamManager(this.nc);
    await this.jsm.streams.add({
      name: this.stream,
      subjects: [`${this.prefix}.rttjs.>`],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs: 50_000,
      duplicate_window: 60_000_000_000,
    });
    this.js = jetstream(this.nc);
    this.store = createRedisSessionStore(this.redis, {
      keyPrefix: this.keyPrefix,
      activeTtlMs: 3_600_000,
      finishedTtlMs: 60_000,
      idempotencyTtlMs: 60_000,
    });
    this.state = testSessionState(this.sid);
    if (!(await this.store.create(this.state))) throw new Error(`round-trip session ${this.sid} already exists`);
  }

  private natsRequest(): Promise<number> {
    return timed(() => this.nc.request(this.echoSubject, PAYLOAD, { timeout: 5000 }));
  }

  private jsPublish(): Promise<number> {
    const id = `rtt-${++this.seq}`;
    return timed(() => this.js.publish(this.jsSubject, PAYLOAD, { msgID: id, expect: { streamName: this.stream } }));
  }

  private async cas(): Promise<number> {
    const c = testCommit(this.state, `rtt:${++this.seq}`);
    const t = performance.now();
    const r = await this.store.commit(c);
    const dt = performance.now() - t;
    if (!r.ok) throw new Error(`round-trip CAS failed: ${r.reason}`);
    this.state = c.state;
    return dt;
  }

  /** `n` sequential samples of each round trip (after a short untimed warm-up). */
  async measure(n: number): Promise<RoundTrips> {
    const warm = Math.min(50, n);
    const run = async (fn: () => Promise<number>): Promise<number[]> => {
      for (let i = 0; i < warm; i++) await fn();
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(await fn());
      return out;
    };
    return {
      nats_request: summarize(await run(() => this.natsRequest())),
      js_publish_ack: summarize(await run(() => this.jsPublish())),
      redis_cas: summarize(await run(() => this.cas())),
      redis_load: summarize(await run(() => timed(() => this.store.load(this.sid)))),
      redis_ping: summarize(await run(() => timed(() => this.redis.ping()))),
    };
  }

  /** Probes a NATS request and a CAS every `intervalMs` until stopped (latency under load). */
  probe(intervalMs: number): { stop(): Promise<LoadProbe> } {
    const nats: number[] = [];
    const cas: number[] = [];
    let stopping = false;
    let failure: unknown = null;
    const loop = (async () => {
      while (!stopping) {
        nats.push(await this.natsRequest());
        cas.push(await this.cas());
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })().catch((err: unknown) => {
      failure = err;
    });
    return {
      stop: async () => {
        stopping = true;
        await loop;
        if (failure) throw new Error(`round-trip probe failed: ${(failure as Error).message ?? String(failure)}`);
        return {
          nats_request: summarize(nats),
          redis_cas: summarize(cas),
          samples: { nats_request: nats, redis_cas: cas },
        };
      },
    };
  }

  /** Removes the stream, the keys and the echo connection. */
  async close(): Promise<void> {
    this.echo?.unsubscribe();
    await this.responder?.close().catch(() => undefined);
    await this.jsm?.streams.delete(this.stream).catch(() => undefined);
    let cursor = "0";
    do {
      const [next, keys] = await this.redis.scan(cursor, "MATCH", `${this.keyPrefix}:*`, "COUNT", 1000);
      if (keys.length) await this.redis.unlink(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
}
