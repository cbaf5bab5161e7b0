import { AgentmeshError, INBOX_SENDERS, type Naming } from "@agentmesh/contracts";

/** The kinds of NATS user a deployment has besides one per role. */
export const SERVICE_USERS = ["coordinator", "client", "gateway", "inspect"] as const;
/** A NATS user: a role name, or one of SERVICE_USERS. */
export type ServiceUser = string;

/** Allow and deny lists of one direction. */
export interface SubjectRules {
  readonly allow: readonly string[];
  readonly deny: readonly string[];
}

/** What one NATS user may publish and subscribe to (nats-server `permissions`). */
export interface UserPermissions {
  readonly publish: SubjectRules;
  readonly subscribe: SubjectRules;
}

/** Denied to every user, whatever its allow list says. */
const ALWAYS_DENIED = [
  "$SYS.>",
  "$JS.API.STREAM.DELETE.>",
  "$JS.API.STREAM.PURGE.>",
  "$JS.API.ACCOUNT.>",
  "$JS.API.SERVER.>",
  "$JS.API.META.>",
];

/**
 * The inbox prefix (replies to our requests) of a connection authenticated with an NKey: each
 * user subscribes only to replies under its own public key, so no one reads another's replies.
 */
export function replyPrefix(publicKey: string): string {
  return `_INBOX.${publicKey}`;
}

/** The JetStream API subjects for reading one consumer (pull, info) and acking its messages. */
function consume(stream: string, consumer: string): string[] {
  return [
    `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
    `$JS.ACK.${stream}.${consumer}.>`,
  ];
}

/**
 * An ordered (ephemeral) consumer on `stream` filtered to `filter`: the 2.9 create subject names
 * the filter, so the server refuses one that reads outside it.
 */
function follow(stream: string, filter: string): string[] {
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.*.${filter}`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    `$JS.API.CONSUMER.DELETE.${stream}.*`,
  ];
}

/** Reading a KV bucket (get, and a watch as an ordered consumer). */
function kvRead(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    ...follow(stream, `$KV.${bucket}.>`),
  ];
}

/** Managing a stream we own: create, update, inspect, its consumers, single messages (never delete or purge it). */
function manage(stream: string): string[] {
  return [
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.UPDATE.${stream}`,
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.STREAM.MSG.DELETE.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.*`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    // after a consumer's replicas grow, its first election among them (provisioning)
    `$JS.API.CONSUMER.LEADER.STEPDOWN.${stream}.*`,
    `$JS.API.CONSUMER.NAMES.${stream}`,
    `$JS.API.CONSUMER.LIST.${stream}`,
  ];
}

/** `$SRV` discovery requests (PING, INFO, STATS), for health checks and `agentmesh services`. */
const DISCOVER = ["$SRV.PING", "$SRV.PING.>", "$SRV.INFO", "$SRV.INFO.>", "$SRV.STATS", "$SRV.STATS.>"];

/**
 * The NATS permissions of every service user, derived from the naming table and the role
 * registry: a role consumes only its own tasks and publishes results only under its own inbox
 * sender; only coordinators write tasks, events, timers and inbox dead letters (a role writes only its own task dead letters); a client submits,
 * follows events, replies and cancels; `inspect` only reads. Replies to a user's requests arrive
 * under `replyPrefix(<its public key>)`, added by the config renderer; answering a request it
 * received (`$SRV`, submit) is granted by `allow_responses`. A role added to the registry gets its
 * user from this function with no other change.
 */
export function natsPermissions(n: Naming, roles: readonly string[]): Record<ServiceUser, UserPermissions> {
  for (const r of roles) {
    if ((SERVICE_USERS as readonly string[]).includes(r)) {
      throw new AgentmeshError("invalid_config", `role "${r}" has the name of a service user; rename the role`);
    }
  }
  const { inbox, tasks, events, dead } = n.streams;
  const cancelledKv = n.kv.cancelled;
  const rules = (publish: string[], subscribe: string[]): UserPermissions => ({
    publish: { allow: ["$JS.API.INFO", ...publish], deny: ALWAYS_DENIED },
    subscribe: { allow: subscribe, deny: ALWAYS_DENIED },
  });
  const out: Record<ServiceUser, UserPermissions> = {};
  for (const role of roles) {
    out[role] = rules(
      [
        ...consume(tasks, n.consumers.role(role)),
        n.inboxFrom(role),
        // a task it can neither run nor report (no recoverable session) goes to its own dead letters
        n.deadLetter(role),
        // its token deltas, on its own role's subject only (a JetStream publish: stored, acknowledged)
        n.tokensFrom(role),
        ...kvRead(cancelledKv),
        // its own health probe (`agentmesh health --service <role>` with this seed): only itself
        `$SRV.INFO.${role}`,
        `$SRV.STATS.${role}`,
      ],
      ["$SRV.>", n.cancelAll, n.rpc(role, "*")],
    );
  }
  out.coordinator = rules(
    [
      ...[inbox, tasks, events, dead, `KV_${cancelledKv}`].flatMap(manage),
      ...consume(inbox, n.consumers.coordinator),
      n.inboxFrom(INBOX_SENDERS.coordinator),
      n.taskAll,
      n.eventsAll,
      n.cancelAll,
      n.deadLetter("*"),
      `$KV.${cancelledKv}.>`,
      ...DISCOVER,
    ],
    [
      "$SRV.>",
      n.submit,
      `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${tasks}.*`,
      `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${inbox}.*`,
    ],
  );
  out.client = rules(
    [
      n.submit,
      n.inboxFrom(INBOX_SENDERS.client),
      ...follow(events, n.eventsAll),
      // the gateway's one feed of the whole events stream (events and token deltas: no filter)
      `$JS.API.CONSUMER.CREATE.${events}.*`,
      // replays from a position: one direct get per stored message
      `$JS.API.DIRECT.GET.${events}`,
      ...DISCOVER,
    ],
    [n.tokensAll],
  );
  // The gateway is a client with its own seed (one user per service): same rights, nothing more.
  out.gateway = out.client;
  out.inspect = rules(
    [
      ...follow(events, n.eventsAll),
      ...[inbox, tasks, events, dead].flatMap((s) => [
        `$JS.API.STREAM.INFO.${s}`,
        `$JS.API.CONSUMER.INFO.${s}.*`,
        `$JS.API.CONSUMER.NAMES.${s}`,
        `$JS.API.CONSUMER.LIST.${s}`,
      ]),
      `$JS.API.STREAM.MSG.GET.${dead}`,
      `$JS.API.STREAM.NAMES`,
      `$JS.API.STREAM.LIST`,
      ...DISCOVER,
    ],
    [n.tokensAll],
  );
  return out;
}
