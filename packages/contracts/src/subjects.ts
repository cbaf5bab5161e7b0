import { z } from "zod";

/** A session id is one NATS subject token and one Redis hash tag: no dots, no wildcards. */
export const SessionId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "session id must be 8-64 of [A-Za-z0-9_-]");
export type SessionId = z.infer<typeof SessionId>;

/** A subject/key prefix: lowercase token(s) safe for subjects, stream names and Redis keys. */
export const Prefix = z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/, "prefix must be lowercase [a-z0-9_-], starting with a letter");

/**
 * Every subject, stream and consumer name, derived from one prefix. Raw subject strings
 * live only here; services take them from this value.
 */
export interface Naming {
  readonly prefix: string;
  readonly submit: string;
  inbox(sessionId: string): string;
  readonly inboxAll: string;
  task(role: string, op: string): string;
  taskFilter(role: string): string;
  readonly taskAll: string;
  /** Direct request/reply call of an op (debugging with `nats req`); not captured by any stream. */
  rpc(role: string, op: string): string;
  events(sessionId: string): string;
  readonly eventsAll: string;
  tokens(sessionId: string): string;
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
    inbox: (sid) => `${prefix}.inbox.${SessionId.parse(sid)}`,
    inboxAll: `${prefix}.inbox.>`,
    task: (role, op) => `${prefix}.task.${role}.${op}`,
    taskFilter: (role) => `${prefix}.task.${role}.>`,
    taskAll: `${prefix}.task.>`,
    rpc: (role, op) => `${prefix}.rpc.${role}.${op}`,
    events: (sid) => `${prefix}.events.${SessionId.parse(sid)}`,
    eventsAll: `${prefix}.events.>`,
    tokens: (sid) => `${prefix}.tokens.${SessionId.parse(sid)}`,
    cancel: (sid) => `${prefix}.cancel.${SessionId.parse(sid)}`,
    cancelAll: `${prefix}.cancel.>`,
    streams: { inbox: `${P}_INBOX`, tasks: `${P}_TASKS`, events: `${P}_EVENTS`, dead: `${P}_DEAD` },
    deadLetter: (role) => `${prefix}.dead.${role}`,
    consumers: { coordinator: "coordinator", role: (role) => `role_${role}` },
    kv: { cancelled: `${P}_CANCELLED` },
    keyPrefix: prefix,
  };
}
