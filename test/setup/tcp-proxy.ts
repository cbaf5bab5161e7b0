import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * How a cut link behaves: `reset` closes every connection and refuses new ones (the peer learns
 * at once, as after a crash of the host); `blackhole` keeps the connections open and drops every
 * byte both ways, and holds new connections without answering (the peer learns only from its own
 * heartbeats, as in a network partition).
 */
export type CutMode = "reset" | "blackhole";

/** A loopback TCP relay in front of one port that a test can cut and heal. */
export interface TcpProxy {
  /** The loopback port clients connect to. */
  readonly port: number;
  /** The loopback port every connection is relayed to. */
  readonly targetPort: number;
  /** Connections relayed (or held, while black-holed) right now. */
  readonly connections: number;
  /** Whether the link is cut, and how. */
  readonly state: "open" | CutMode;
  cut(mode?: CutMode): void;
  /** Opens the link again; connections held by a black hole are closed (their peers reconnect). */
  heal(): void;
  close(): Promise<void>;
}

interface Pair {
  readonly client: Socket;
  upstream: Socket | null;
}

/**
 * Starts a relay on `port` (0: a free one) to `targetPort`, both on 127.0.0.1. The target may be
 * down: a connection to a port nothing listens on is closed, as a direct one would be refused.
 */
export async function startTcpProxy(targetPort: number, port = 0): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let state: TcpProxy["state"] = "open";
  const drop = (p: Pair) => {
    p.client.destroy();
    p.upstream?.destroy();
    pairs.delete(p);
  };
  const server: Server = createServer((client) => {
    if (state === "reset") return void client.destroy();
    const pair: Pair = { client, upstream: null };
    pairs.add(pair);
    client.on("error", () => drop(pair)).on("close", () => drop(pair));
    if (state === "blackhole") return;
    const upstream = createConnection({ host: "127.0.0.1", port: targetPort });
    pair.upstream = upstream;
    upstream.on("error", () => drop(pair)).on("close", () => drop(pair));
    // bytes are forwarded one chunk at a time so a black hole can drop them mid-connection
    client.on("data", (b: Buffer) => {
      if (state === "open") upstream.write(b);
    });
    upstream.on("data", (b: Buffer) => {
      if (state === "open") client.write(b);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  return {
    port: bound,
    targetPort,
    get connections() {
      return pairs.size;
    },
    get state() {
      return state;
    },
    cut(mode = "blackhole") {
      state = mode;
      if (mode === "reset") for (const p of [...pairs]) drop(p);
    },
    heal() {
      if (state === "blackhole") for (const p of [...pairs]) drop(p);
      state = "open";
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const p of [...pairs]) drop(p);
        server.close(() => resolve());
      }),
  };
}
