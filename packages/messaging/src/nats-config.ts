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
  const cfg: Record<string, unknown> = {
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
    accounts: { [account]: { jetstream: "enabled", users } },
  };
  return `${JSON.stringify(cfg, null, 2)}\n`;
}
