import { connect, type NatsConnection } from "@nats-io/transport-node";

/** Connects to a NATS URL the way the e2e harness does (credentials in the URL are used). */
export async function natsConnect(url: string, name: string): Promise<NatsConnection> {
  const u = new URL(url);
  return connect({ servers: u.host, user: u.username || undefined, pass: u.password || undefined, name });
}
