import type { NatsConnection } from "@nats-io/transport-node";

/** What the probes read about a NATS connection: both null when all is well, else why not. */
export interface LinkHealth {
  /** Not ready while disconnected (the client is reconnecting), draining or closed. */
  whyNotReady(): string | null;
  /** Not alive once the connection is closed for good: only a restart brings it back. */
  whyDead(): string | null;
}

/**
 * Follows a connection's status events so a probe can tell, without a round trip, whether it is
 * connected now. The connection is taken as connected when this is called (connectNats returns
 * once it is).
 */
export function linkHealth(nc: NatsConnection): LinkHealth {
  let connected = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "staleConnection" || s.type === "reconnecting") connected = false;
      else if (s.type === "reconnect") connected = true;
    }
  })().catch(() => undefined);
  return {
    whyNotReady: () =>
      nc.isClosed()
        ? "nats: connection closed"
        : nc.isDraining()
          ? "nats: draining"
          : connected
            ? null
            : "nats: disconnected, reconnecting",
    whyDead: () => (nc.isClosed() ? "nats: connection closed for good" : null),
  };
}
