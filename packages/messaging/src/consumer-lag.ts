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

/**
 * A reader of durable consumers' backlogs over one connection (one `CONSUMER.INFO` request per
 * read, which every service's NATS user may make for its own consumer). A failure is an
 * `AgentmeshError` (`unavailable`, `timeout`).
 */
export function consumerLagReader(nc: NatsConnection): (stream: string, durable: string) => Promise<ConsumerLag> {
  let jsm: Promise<JetStreamManager> | null = null;
  return async (stream, durable) => {
    try {
      jsm ??= jetstreamManager(nc, { checkAPI: false });
      const info = await (await jsm).consumers.info(stream, durable);
      return { pending: info.num_pending, ackPending: info.num_ack_pending };
    } catch (err) {
      jsm = null;
      throw natsFailure(err, `cannot read the backlog of consumer ${durable} on ${stream}`);
    }
  };
}
