import { createHash } from "node:crypto";
import { keyLayout } from "./keys.js";
import { SCRIPT_COMMANDS } from "./scripts.js";

/** The kinds of Redis client agentmesh has; each gets its own ACL user (deploy/redis/README.md). */
export const REDIS_USER_KINDS = ["coordinator", "gateway", "inspect"] as const;
export type RedisUserKind = (typeof REDIS_USER_KINDS)[number];

/** What every client needs to connect: ioredis's ready check (INFO), its client name, PING, QUIT. */
const CONNECTION = ["info", "ping", "quit", "client|setname", "select"];

/**
 * What the Redis adapter sends itself (beside the commands inside its scripts); `wait` confirms a
 * commit on the replicas. `waitaof` is not here: a 7.0 server refuses an ACL naming it; on 7.2+
 * grant it by hand and the store uses it (without it the store falls back to WAIT).
 */
const STORE_CLIENT = ["evalsha", "eval", "hmget", "sismember", "lrange", "scan", "zrem", "pttl", "get", "wait"];

/** Read-only commands an inspecting tool may send (the CLI's `inspect` and `sessions` use a few). */
const READS = [
  "hmget",
  "hget",
  "hgetall",
  "hlen",
  "lrange",
  "llen",
  "sismember",
  "smembers",
  "scard",
  "get",
  "exists",
  "type",
  "pttl",
  "ttl",
  "scan",
  "zrange",
  "zrangebyscore",
  "zcard",
  "zscore",
];

/** What the gateway writes under its own keys: its rate-limit and concurrency records (their scripts read the server's TIME). */
const GATEWAY_WRITES = [
  "set",
  "del",
  "incr",
  "incrby",
  "pexpire",
  "expire",
  "zadd",
  "zrem",
  "zremrangebyscore",
  "evalsha",
  "eval",
  "multi",
  "exec",
  "time",
];

/** One kind's access: key patterns (`~` read-write, `%R~` read-only) and the only commands it may run. */
export interface RedisAccess {
  readonly kind: RedisUserKind;
  readonly keys: readonly string[];
  readonly commands: readonly string[];
}

/** Escapes ACL glob metacharacters in the prefix so a pattern matches only that prefix. */
const glob = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * The access of each kind under one key prefix, derived from the key layout (`keys.ts`) and the
 * commands the adapter and its scripts send. The coordinator may also `CONFIG GET` (its
 * start-up durability check, never SET); nobody may run FLUSHALL, KEYS, DEBUG, ACL or pub/sub.
 */
export function redisAccess(prefix: string): Record<RedisUserKind, RedisAccess> {
  const p = glob(prefix);
  const { sessions, idempotency, timers, threads } = keyLayout(prefix).globs;
  const own = [sessions, idempotency, timers, threads];
  const sorted = (xs: readonly string[]) => [...new Set(xs)].sort();
  return {
    coordinator: {
      kind: "coordinator",
      keys: own.map((x) => `~${x}`),
      commands: sorted([...CONNECTION, ...STORE_CLIENT, ...SCRIPT_COMMANDS, "config|get"]),
    },
    gateway: {
      kind: "gateway",
      // sessions and threads are read (coordinators write both); only its limits are its own
      keys: [`%R~${sessions}`, `%R~${threads}`, `~${p}:rl:*`],
      commands: sorted([...CONNECTION, ...READS, ...GATEWAY_WRITES]),
    },
    inspect: { kind: "inspect", keys: [`%R~${p}:*`], commands: sorted([...CONNECTION, ...READS]) },
  };
}

/** The ACL rules of one kind, after `reset`: everything denied, then its keys and commands allowed. */
export function aclRules(access: RedisAccess): string[] {
  return ["resetkeys", "resetchannels", "-@all", ...access.keys, ...access.commands.map((c) => `+${c}`)];
}

/**
 * The rules of the user agentmesh's clients log in to the sentinels as (REDIS_SENTINEL_USERNAME):
 * asking for the primary and the other sentinels, and following `+switch-master`. Nothing else:
 * no failover, no reconfiguration, no other channel.
 */
export function sentinelClientRules(): string[] {
  return [
    "resetkeys",
    "resetchannels",
    "-@all",
    "&+switch-master",
    "+ping",
    "+sentinel|get-master-addr-by-name",
    "+sentinel|sentinels",
    "+subscribe",
  ];
}

/** One user of a rendered ACL file. */
export interface AclUser {
  readonly kind: RedisUserKind;
  /** The user name; default the kind. */
  readonly name?: string;
  /** Its password; without one the user is rendered `off` (it cannot log in). */
  readonly password?: string;
}

/**
 * An ACL file (`aclfile` / `ACL LOAD` format) for the given users under `prefix`. Passwords are
 * stored as SHA-256 hashes, so the file is no secret of its own. `default` (no login) may only PING,
 * for health checks.
 */
export function renderAclFile(prefix: string, users: readonly AclUser[]): string {
  const access = redisAccess(prefix);
  // no comment line: Redis refuses to load an aclfile with anything but `user` lines
  const lines = ["user default on nopass resetkeys resetchannels -@all +ping"];
  for (const u of users) {
    const pass =
      u.password === undefined || u.password.length === 0
        ? ["off", "resetpass"]
        : ["on", `#${createHash("sha256").update(u.password).digest("hex")}`];
    lines.push(["user", u.name ?? u.kind, "reset", ...pass, ...aclRules(access[u.kind])].join(" "));
  }
  return `${lines.join("\n")}\n`;
}
