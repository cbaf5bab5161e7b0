import { AgentmeshError } from "@agentmesh/contracts";
import type { Redis } from "ioredis";

/** Which command confirms replication on this server: `WAITAOF` where it exists (7.2+), else `WAIT`. */
export type ReplicaWaitCommand = { readonly kind: "wait" } | { readonly kind: "waitaof"; readonly numlocal: 0 | 1 };

/**
 * The command for a server, from its `INFO server` and `INFO persistence` text: `WAITAOF` from
 * 7.2 on (asking the primary's own fsync too when its AOF is on), `WAIT` before. Pure, so every
 * branch is unit-tested on this machine's 7.0 as well.
 */
export function replicaWaitCommand(infoServer: string, infoPersistence: string): ReplicaWaitCommand {
  const m = /^redis_version:(\d+)\.(\d+)/m.exec(infoServer);
  const [major, minor] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  if (major < 7 || (major === 7 && minor < 2)) return { kind: "wait" };
  return { kind: "waitaof", numlocal: /^aof_enabled:1\s*$/m.test(infoPersistence) ? 1 : 0 };
}

/** True for a server (or an ACL) that does not let us run WAITAOF: we fall back to WAIT for good. */
const isUnavailableCommand = (err: unknown) =>
  /unknown command|NOPERM|no permissions/i.test(err instanceof Error ? err.message : String(err));

const failed = (message: string) => new AgentmeshError("unavailable", message, { retryable: true, component: "redis" });

/**
 * `awaitReplicas` of the Redis store. `WAIT` counts the replicas that acknowledged every write of
 * the connection it runs on, so it must run on the connection that made the write: it is sent on
 * the client's current connection right after the write's reply (the caller awaits nothing else in
 * between), and the answer counts only when that connection is still the one in use (`stream`):
 * after a reconnect, a `WAIT` on the new connection would confirm nothing of the old one's writes.
 */
export function createReplicaWait(redis: Redis, replicas: number, timeoutMs: number): () => Promise<void> {
  if (!Number.isSafeInteger(replicas) || replicas < 0)
    throw new Error(`session-store option waitReplicas must be a non-negative integer, got ${String(replicas)}`);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)
    throw new Error(`session-store option waitTimeoutMs must be a positive integer, got ${String(timeoutMs)}`);
  let command: Promise<ReplicaWaitCommand> | null = null;
  const detect = async (): Promise<ReplicaWaitCommand> => {
    const [server, persistence] = await Promise.all([redis.info("server"), redis.info("persistence")]);
    return replicaWaitCommand(server, persistence);
  };

  /** The replicas that confirmed, by the detected command; WAITAOF that is refused turns into WAIT. */
  async function confirmed(): Promise<number> {
    command ??= detect().catch((err: unknown) => {
      command = null;
      throw err;
    });
    const c = await command;
    if (c.kind === "waitaof") {
      try {
        const reply = (await redis.call("WAITAOF", c.numlocal, replicas, timeoutMs)) as unknown[];
        if (c.numlocal === 1 && Number(reply[0]) < 1)
          throw failed(`the Redis primary did not fsync its AOF within ${timeoutMs} ms`);
        return Number(reply[1]);
      } catch (err) {
        if (!isUnavailableCommand(err)) throw err;
        command = Promise.resolve({ kind: "wait" });
      }
    }
    return Number(await redis.call("WAIT", replicas, timeoutMs));
  }

  return async function awaitReplicas(): Promise<void> {
    if (replicas === 0) return;
    const stream = redis.stream;
    const n = await confirmed();
    if (redis.stream !== stream)
      throw failed("the connection to Redis changed while waiting for replicas (a failover?): the write may be lost");
    if (n < replicas)
      throw failed(`only ${n} of ${replicas} Redis replicas confirmed the write within ${timeoutMs} ms`);
  };
}
