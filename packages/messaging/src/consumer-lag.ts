import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { natsFailure } from "./errors.js";

/** A durable consumer's backlog as the server counts it. */
export interface ConsumerLag {
  /** Messages matching the consumer's filter not yet delivered (`num_pending`). */
  readonly pending: number;
  /** Messages delivered and not yet acked (`num_ack_pending`). */
  readonly ackPending: number;
}

/** Reads one durable consumer's backlog. */
export type ConsumerLagReader = (stream: string, durable: string) => Promise<ConsumerLag>;

/**
 * A reader of durable consumers' backlogs over one connection: one `CONSUMER.INFO` request
 * (which every service's NATS user may make for its own consumer), answered from a cache for
 * `maxAgeMs` so the gauges of one scrape share it. A failure is an `AgentmeshError`
 * (`unavailable`, `timeout`) and is not cached.
 */
export function consumerLagReader(
  nc: NatsConnection,
  opts: { maxAgeMs?: number; timeoutMs?: number } = {},
): ConsumerLagReader {
  const maxAgeMs = opts.maxAgeMs ?? 250;
  let jsm: Promise<JetStreamManager> | null = null;
  const cache = new Map<string, { at: number; lag: Promise<ConsumerLag> }>();
  const read = async (stream: string, durable: string): Promise<ConsumerLag> => {
    try {
      jsm ??= jetstreamManager(nc, { checkAPI: false, timeout: opts.timeoutMs ?? 2000 });
      const info = await (await jsm).consumers.info(stream, durable);
      return { pending: info.num_pending, ackPending: info.num_ack_pending };
    } catch (err) {
      jsm = null;
      throw natsFailure(err, `cannot read the backlog of consumer ${durable} on ${stream}`);
    }
  };
  return (stream, durable) => {
    const key = `${stream}\u0000${durable}`;
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < maxAgeMs) return hit.lag;
    const lag = read(stream, durable);
    cache.set(key, { at: Date.now(), lag });
    void lag.catch(() => cache.delete(key));
    return lag;
  };
}
