import { AgentmeshError, type Naming } from "@agentmesh/contracts";
import { nkeys } from "@nats-io/transport-node";
import { userNKey, type UserNKey } from "./nkey.js";
import { natsPermissions, replyPrefix, SERVICE_USERS, type ServiceUser } from "./permissions.js";

/** A new NATS user NKey: the seed (a secret: mount it, never commit it) and its public key. */
export function newUserKey(): { readonly seed: string; readonly publicKey: string } {
  const kp = nkeys.createUser();
  return { seed: new TextDecoder().decode(kp.getSeed()), publicKey: kp.getPublicKey() };
}

/** The public key of a user seed; a typed error when it is not one. */
export function publicKeyOfSeed(seed: string): string {
  return userKeyOfSeed(seed).publicKey;
}

/** A user seed's key (public key and signer); a typed error when it is not one. */
export function userKeyOfSeed(seed: string): UserNKey {
  try {
    return userNKey(seed);
  } catch (err) {
    throw new AgentmeshError(
      "invalid_config",
      `the NATS NKey seed is not a user seed (${err instanceof Error ? err.message : String(err)})`,
      { component: "nats" },
    );
  }
}

/**
 * The NATS account the generated config puts every user in: the prefix upper-cased (`AGENTMESH`).
 * Monitoring (`/jsz?acc=`) and the KEDA scaler name it.
 */
export function natsAccountName(prefix: string): string {
  return prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/** What a generated nats-server configuration contains. */
export interface NatsServerConfigOptions {
  readonly naming: Naming;
  /** Role names (ROLE_NAMES): each gets its own user. */
  readonly roles: readonly string[];
  /** Public key per user: every role and every SERVICE_USERS entry. */
  readonly keys: Readonly<Record<ServiceUser, string>>;
  /** Public key of an unrestricted user (tests, break-glass operations); none by default. */
  readonly admin?: string;
  /** `host:port` to listen on; default `0.0.0.0:4222`. */
  readonly listen?: string;
  /** JetStream store directory; default `/data/jetstream`. */
  readonly storeDir?: string;
  /** Optional `/healthz` monitoring port. */
  readonly httpPort?: number;
  /** Server TLS files (paths inside the server's container). */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca?: string; readonly verify?: boolean };
  /** The server's name, unique in a cluster (JetStream's peers are known by it); required with `cluster`. */
  readonly serverName?: string;
  /** Makes the server one node of a cluster: every node gets the same accounts and users, and routes to the others. */
  readonly cluster?: NatsClusterConfig;
}

/** The `cluster` block of one node: where it listens for routes and whom it routes to. */
export interface NatsClusterConfig {
  /** The cluster's name, the same on every node. */
  readonly name: string;
  /** `host:port` the node accepts routes on (6222 by convention). */
  readonly listen: string;
  /** Every node's route URL (`nats-route://host:6222`); a node skips the one that is itself. */
  readonly routes: readonly string[];
  /** The route address the node tells the others; default its listen address. */
  readonly advertise?: string;
  /** When true the node does not tell clients the other nodes' client addresses (clients use only the ones they were given). */
  readonly noAdvertise?: boolean;
  /** The user and password a route must present; route URLs then carry them (`nats-route://user:pass@host:6222`). */
  readonly authorization?: { readonly user: string; readonly password: string };
}

/** A route URL for `host:port` with the cluster's route credentials in it, when it has any. */
export function natsRouteUrl(hostPort: string, auth?: NatsClusterConfig["authorization"]): string {
  const cred = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@` : "";
  return `nats-route://${cred}${hostPort}`;
}

function clusterBlock(c: NatsClusterConfig): Record<string, unknown> {
  if (c.routes.length === 0) throw new AgentmeshError("invalid_config", "a NATS cluster needs at least one route");
  return {
    name: c.name,
    listen: c.listen,
    routes: [...c.routes],
    ...(c.advertise ? { advertise: c.advertise } : {}),
    ...(c.noAdvertise ? { no_advertise: true } : {}),
    ...(c.authorization ? { authorization: { user: c.authorization.user, password: c.authorization.password } } : {}),
    // a node that lost its routes keeps trying: a restarted peer is found again
    connect_retries: 120,
  };
}

/**
 * A nats-server configuration (JSON, which nats-server reads) with one account holding one NKey
 * user per service, each with the permissions of natsPermissions.
 */
export function natsServerConfig(o: NatsServerConfigOptions): string {
  const perms = natsPermissions(o.naming, o.roles);
  const users = [...o.roles, ...SERVICE_USERS].map((user) => {
    const publicKey = o.keys[user];
    if (!publicKey) throw new AgentmeshError("invalid_config", `no NKey for NATS user "${user}"`);
    const p = perms[user];
    if (!p) throw new AgentmeshError("internal", `no permissions for NATS user "${user}"`);
    return {
      nkey: publicKey,
      permissions: {
        publish: { allow: [...p.publish.allow], deny: [...p.publish.deny] },
        subscribe: { allow: [...p.subscribe.allow, `${replyPrefix(publicKey)}.>`], deny: [...p.subscribe.deny] },
        allow_responses: true,
      },
    };
  });
  if (o.admin) users.push({ nkey: o.admin } as (typeof users)[number]);
  const account = natsAccountName(o.naming.prefix);
  if (o.cluster && !o.serverName)
    throw new AgentmeshError("invalid_config", "a clustered NATS server needs a server name (unique per node)");
  const cfg: Record<string, unknown> = {
    ...(o.serverName ? { server_name: o.serverName } : {}),
    listen: o.listen ?? "0.0.0.0:4222",
    max_payload: 1048576,
    jetstream: { store_dir: o.storeDir ?? "/data/jetstream" },
    ...(o.httpPort ? { http_port: o.httpPort } : {}),
    ...(o.tls
      ? {
          tls: {
            cert_file: o.tls.cert,
            key_file: o.tls.key,
            ...(o.tls.ca ? { ca_file: o.tls.ca } : {}),
            verify: o.tls.verify ?? false,
          },
        }
      : {}),
    ...(o.cluster ? { cluster: clusterBlock(o.cluster) } : {}),
    accounts: { [account]: { jetstream: "enabled", users } },
  };
  return `${JSON.stringify(cfg, null, 2)}\n`;
}
