import { z } from "zod";
import { SessionId } from "./ids.js";

/** Who owns a session or thread: the name of the gateway API key that created it (`anonymous` without keys). */
export const Owner = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "owner must be 1-64 of [a-z0-9_-], starting with a letter or digit");
export type Owner = z.infer<typeof Owner>;

/** A subject/key prefix: lowercase token(s) safe for subjects, stream names and Redis keys. */
export const Prefix = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,39}$/, "prefix must be lowercase [a-z0-9_-], starting with a letter");

/**
 * Who wrote an inbox input, carried as the last token of its subject: a role name (results),
 * `coordinator` (start, timer) or `client` (user_reply and cancel from the CLI or a gateway).
 * NATS stamps no sender on JetStream messages; per-sender subjects with per-user publish rights
 * make the subject the proof.
 */
export const InboxSender = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,39}$/, "inbox sender must be a role name, coordinator or client");
export type InboxSender = z.infer<typeof InboxSender>;

/** A role name as the last token of a token-delta subject, so that publish rights say whose text it is. */
const RoleToken = z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, "a token subject's role must be a role name");

/** The senders that are not roles. */
export const INBOX_SENDERS = { coordinator: "coordinator", client: "client" } as const;

/**
 * Every subject, stream and consumer name, derived from one prefix. Raw subject strings
 * live only here; services take them from this value.
 */
export interface Naming {
  readonly prefix: string;
  readonly submit: string;
  /** A session's inbox, one subject per sender, so NATS permissions say who may write what. */
  inbox(sessionId: string, sender: InboxSender): string;
  /** Every inbox subject (the `<P>_INBOX` stream's filter). */
  readonly inboxAll: string;
  /** The inbox subject pattern one sender may publish to (every session). */
  inboxFrom(sender: InboxSender): string;
  /** The sender token of an inbox subject, or null when the subject is not an inbox subject of this prefix. */
  inboxSender(subject: string): string | null;
  task(role: string, op: string): string;
  taskFilter(role: string): string;
  readonly taskAll: string;
  /** Direct request/reply call of an op (debugging with `nats req`); not captured by any stream. */
  rpc(role: string, op: string): string;
  events(sessionId: string): string;
  readonly eventsAll: string;
  /** A role's token deltas of one session: `<p>.tokens.<sid>.<role>`, stored in the events stream. */
  tokens(sessionId: string, role: string): string;
  /** Every role's token deltas of one session (a subscription or a direct get's filter). */
  sessionTokens(sessionId: string): string;
  /** What a role may publish its token deltas on: its own role's subject of any session. */
  tokensFrom(role: string): string;
  readonly tokensAll: string;
  cancel(sessionId: string): string;
  readonly cancelAll: string;
  readonly streams: { readonly inbox: string; readonly tasks: string; readonly events: string; readonly dead: string };
  readonly deadLetter: (role: string) => string;
  readonly consumers: { readonly coordinator: string; role(role: string): string };
  /** JetStream KV buckets; `cancelled`: session ids whose sessions were cancelled or ended (agents check it before work). */
  readonly kv: { readonly cancelled: string };
  /** Redis key prefix (keys are `<prefix>:...`). */
  readonly keyPrefix: string;
}

/** Builds the naming table for a prefix (default `agentmesh`). */
export function naming(prefix = "agentmesh"): Naming {
  Prefix.parse(prefix);
  const P = prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_");
  return {
    prefix,
    submit: `${prefix}.submit`,
    inbox: (sid, sender) => `${prefix}.inbox.${SessionId.parse(sid)}.${InboxSender.parse(sender)}`,
    inboxAll: `${prefix}.inbox.>`,
    inboxFrom: (sender) => `${prefix}.inbox.*.${InboxSender.parse(sender)}`,
    inboxSender: (subject) => {
      const head = `${prefix}.inbox.`;
      if (!subject.startsWith(head)) return null;
      const rest = subject.slice(head.length).split(".");
      return rest.length === 2 && rest[0] && rest[1] ? rest[1] : null;
    },
    task: (role, op) => `${prefix}.task.${role}.${op}`,
    taskFilter: (role) => `${prefix}.task.${role}.>`,
    taskAll: `${prefix}.task.>`,
    rpc: (role, op) => `${prefix}.rpc.${role}.${op}`,
    events: (sid) => `${prefix}.events.${SessionId.parse(sid)}`,
    eventsAll: `${prefix}.events.>`,
    tokens: (sid, role) => `${prefix}.tokens.${SessionId.parse(sid)}.${RoleToken.parse(role)}`,
    sessionTokens: (sid) => `${prefix}.tokens.${SessionId.parse(sid)}.*`,
    tokensFrom: (role) => `${prefix}.tokens.*.${RoleToken.parse(role)}`,
    tokensAll: `${prefix}.tokens.>`,
    cancel: (sid) => `${prefix}.cancel.${SessionId.parse(sid)}`,
    cancelAll: `${prefix}.cancel.>`,
    streams: { inbox: `${P}_INBOX`, tasks: `${P}_TASKS`, events: `${P}_EVENTS`, dead: `${P}_DEAD` },
    deadLetter: (role) => `${prefix}.dead.${role}`,
    consumers: { coordinator: "coordinator", role: (role) => `role_${role}` },
    kv: { cancelled: `${P}_CANCELLED` },
    keyPrefix: prefix,
  };
}
