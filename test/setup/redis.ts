import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { renderAclFile, type RedisUserKind } from "@agentmesh/session-store";

/** Deletes every key under a test prefix, so runs sharing one server leave nothing behind. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 500);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
}

/**
 * Creates the generated ACL users of `prefix` on the test server, exactly as the rendered file's
 * lines say, under unique names (`<prefix>-<kind>`); returns each one's login URL. `created`
 * collects the names, for `ACL DELUSER` after the tests.
 */
export async function createAclUsers(
  admin: Redis,
  redisUrl: string,
  prefix: string,
  kinds: readonly RedisUserKind[],
  created: string[],
): Promise<Record<RedisUserKind, { name: string; url: string }>> {
  const users = kinds.map((kind) => ({ kind, name: `${prefix}-${kind}`, password: randomBytes(12).toString("hex") }));
  for (const line of renderAclFile(prefix, users).split("\n")) {
    const [word, name, ...rules] = line.split(" ");
    if (word !== "user" || name === "default" || name === undefined) continue;
    await admin.call("ACL", "SETUSER", name, ...rules);
    created.push(name);
  }
  const host = new URL(redisUrl).host;
  const out = {} as Record<RedisUserKind, { name: string; url: string }>;
  for (const x of users) out[x.kind] = { name: x.name, url: `redis://${x.name}:${x.password}@${host}` };
  return out;
}
