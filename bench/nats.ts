import { readFileSync } from "node:fs";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { parseNatsUrl } from "@agentmesh/messaging";

/** How the bench reaches NATS: a URL or a cluster's URLs comma-separated (credentials in it are used) and, under access control, an NKey seed file. */
export interface BenchNats {
  readonly url: string;
  /** The seed of the bench's own user (the generated config's unrestricted `admin`, as in the e2e harness). */
  readonly seedFile?: string;
}

/** Connects the way the e2e harness does; the same client options with access control on and off. */
export async function natsConnect(target: BenchNats, name: string): Promise<NatsConnection> {
  const { servers, user, pass } = parseNatsUrl(target.url);
  const seed = target.seedFile ? readFileSync(target.seedFile, "utf8").trim() : null;
  return connect({
    servers,
    user,
    pass,
    ...(seed ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)) } : {}),
    name,
  });
}
