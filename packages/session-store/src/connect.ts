import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { AgentmeshError, redactUrls } from "@agentmesh/contracts";

/** Options of `connectRedis`. */
export interface ConnectRedisOptions {
  /** Client name shown in `CLIENT LIST` (e.g. the service and pod). */
  readonly name: string;
  /** How long start-up may take to reach Redis before it fails (default 3000 ms; 30 s behind Sentinel, tried again every 250 ms). */
  readonly connectTimeoutMs?: number;
  /**
   * Receives connection errors after start-up (ioredis reconnects by itself meanwhile). Without
   * it errors are swallowed here; either way an unhandled 'error' event cannot crash the process.
   */
  readonly onError?: (err: Error) => void;
  /**
   * File with the CA certificate(s) that sign the server's certificate, for a `rediss://` URL
   * whose server is not signed by a public CA (REDIS_TLS_CA). The host name is verified too.
   */
  readonly tlsCaFile?: string;
  /**
   * Find the primary through Redis Sentinel instead of the URL's host (REDIS_SENTINELS). The URL
   * still gives the user, password, database and scheme (`rediss://`: TLS to the primary and to
   * the sentinels, with `tlsCaFile`).
   */
  readonly sentinel?: RedisSentinelOptions;
}

/** Where the sentinels are, which primary they watch, and how to log in to them. */
export interface RedisSentinelOptions {
  readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** The primary's name in the sentinels' configuration (`sentinel monitor <name> …`). */
  readonly masterName: string;
  /** The sentinels' own ACL user and password (they are separate from the primary's). */
  readonly username?: string;
  readonly password?: string;
}

/** ioredis's Sentinel options: the primary asked for by name, failovers followed at once. */
function sentinelOptions(s: RedisSentinelOptions | undefined, tls: boolean, ca: Buffer | undefined) {
  if (s === undefined) return {};
  return {
    sentinels: s.sentinels.map((x) => ({ host: x.host, port: x.port })),
    name: s.masterName,
    ...(s.username === undefined ? {} : { sentinelUsername: s.username }),
    ...(s.password === undefined ? {} : { sentinelPassword: s.password }),
    ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: ca === undefined ? {} : { ca } } : {}),
    // subscribes to the sentinels' +switch-master, so the client moves to a promoted replica when
    // it happens instead of when its old connection times out
    failoverDetector: true,
    // a demoted primary that came back answers writes with READONLY: reconnect (asking the
    // sentinels again) and resend the command there
    reconnectOnError: (err: Error) => (err.message.startsWith("READONLY") ? 2 : false),
  };
}

/** The TLS options for `url`: none for `redis://`, the system CAs or `tlsCaFile` for `rediss://`. */
function tlsOptions(
  url: string,
  where: string,
  caFile: string | undefined,
): { tls: { ca: Buffer } } | Record<string, never> {
  if (caFile === undefined) return {};
  if (!/^rediss:\/\//i.test(url)) {
    throw new AgentmeshError(
      "invalid_config",
      `REDIS_TLS_CA is set but REDIS_URL ${where} does not use TLS; use a rediss:// URL`,
    );
  }
  try {
    return { tls: { ca: readFileSync(caFile) } };
  } catch (e) {
    throw new AgentmeshError("invalid_config", `cannot read the Redis TLS CA file ${caFile}: ${(e as Error).message}`);
  }
}

/** True for the server's replies to a wrong or missing user/password. */
const isAuthError = (err: Error) =>
  /WRONGPASS|NOAUTH|invalid username-password|user is disabled|NOPERM/i.test(err.message);

/** The URL without its credentials, for messages and logs. */
export function redactRedisUrl(url: string): string {
  return redactUrls(url);
}

/** How long start-up may take to reach Redis: one node answers at once or is down; behind Sentinel it covers a failover. */
export const REDIS_START_TIMEOUT_MS = { single: 3000, sentinel: 30_000 } as const;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Connects a client that fails fast: start-up either gets a ready connection within the timeout
 * or throws `cannot reach Redis at <url>`, instead of queueing commands while retrying forever.
 * One node is tried once (3 s). Behind Sentinel a start during a failover is normal (a sentinel
 * still names the primary that died, or none does yet), so it tries again every 250 ms for up to
 * 30 s, long enough for the sentinels to agree on a new primary; wrong credentials and a Redis
 * Cluster end it at once. Once up, a command waits for at most two reconnect attempts before it
 * rejects, so a request path sees an outage as an error rather than a hang.
 */
export async function connectRedis(url: string, opts: ConnectRedisOptions): Promise<Redis> {
  const timeoutMs =
    opts.connectTimeoutMs ??
    (opts.sentinel === undefined ? REDIS_START_TIMEOUT_MS.single : REDIS_START_TIMEOUT_MS.sentinel);
  const where =
    opts.sentinel === undefined
      ? redactRedisUrl(url)
      : `primary "${opts.sentinel.masterName}" of sentinels ${opts.sentinel.sentinels.map((x) => `${x.host}:${x.port}`).join(",")}`;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const left = deadline - Date.now();
    try {
      // each try gets at most one node's time, so a node that drops packets cannot use the budget up
      return await connectOnce(url, opts, where, Math.max(Math.min(left, REDIS_START_TIMEOUT_MS.single), 1));
    } catch (e) {
      const final = !(e instanceof AgentmeshError) || e.retryable === false;
      if (opts.sentinel === undefined || final || deadline - Date.now() < 250) {
        if (attempt === 1 || final) throw e;
        throw new AgentmeshError("unavailable", `${e.message} (${attempt} tries in ${timeoutMs} ms)`, {
          component: "redis",
          cause: e,
        });
      }
      await sleep(250);
    }
  }
}

/** One connection attempt within `timeoutMs`: a ready client that is not a Redis Cluster node, or an error that says why. */
async function connectOnce(url: string, opts: ConnectRedisOptions, where: string, timeoutMs: number): Promise<Redis> {
  const tls = tlsOptions(url, where, opts.tlsCaFile);
  const redis = new Redis(url, {
    ...tls,
    ...sentinelOptions(opts.sentinel, /^rediss:\/\//i.test(url), "tls" in tls ? tls.tls.ca : undefined),
    lazyConnect: true,
    connectionName: opts.name,
    // kept for every later reconnect (and the sentinel clients): never a try's shrunken remainder
    connectTimeout: REDIS_START_TIMEOUT_MS.single,
    maxRetriesPerRequest: 2,
    // Commands issued in the same tick (a coordinator's 32 inputs in flight: loads, commits,
    // outbox clears) go out in one write and wake Redis once: `pnpm bench` at c=64 measured
    // 25% less CPU in redis-server and about 5% more agent steps/s. Auto-pipelined commands keep
    // their order; the few ioredis never batches (quit, info, script, multi, an explicit
    // pipeline) are written at once and may pass a batch still waiting for its tick. Define a
    // client's scripts (`defineCommand`: the session store, the gateway's limits) before it carries
    // traffic: ioredis 6.0.0 fails a batch made before a script was defined that calls it.
    enableAutoPipelining: true,
  });
  let lastError: Error | null = null;
  redis.on("error", (err: Error) => {
    lastError = err;
    opts.onError?.(err);
  });
  let timer: NodeJS.Timeout | undefined;
  const connecting = redis.connect();
  // If the timeout wins, connect() still settles later; keep that from becoming an unhandled rejection.
  connecting.catch(() => {});
  try {
    await Promise.race([
      connecting,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (e) {
    redis.disconnect();
    // connect() itself only says "Connection is closed."; the listener saw the real cause.
    const cause = (lastError as Error | null) ?? (e as Error);
    if (isAuthError(cause)) {
      throw new AgentmeshError(
        "unavailable",
        `Redis at ${where} refused our credentials (${cause.message}); check the user and password in REDIS_URL`,
        { retryable: false, component: "redis", cause },
      );
    }
    throw new AgentmeshError("unavailable", `cannot reach Redis at ${where}: ${cause.message}`, {
      component: "redis",
      cause,
    });
  } finally {
    clearTimeout(timer);
  }
  try {
    await refuseCluster(redis, where);
  } catch (e) {
    redis.disconnect();
    throw e;
  }
  return redis;
}

/**
 * Refuses a Redis Cluster node: a session's keys share one hash slot, but the timer set and the
 * idempotency keys are in other slots, and the commit writes them in the same script.
 */
async function refuseCluster(redis: Redis, where: string): Promise<void> {
  const info = await redis.info("cluster");
  if (/^cluster_enabled:1\s*$/m.test(info)) {
    throw new AgentmeshError(
      "invalid_config",
      `Redis at ${where} runs in cluster mode, which agentmesh does not support: one commit writes a session's keys together with the timer set and the idempotency keys, and those live in other hash slots than the session's, so a cluster would refuse the script (CROSSSLOT). Use a single Redis node, or a primary with replicas behind Redis Sentinel (REDIS_SENTINELS); see docs/redis-failover.md`,
      { retryable: false, component: "redis" },
    );
  }
}

/** What `checkDurability` found out about the server's persistence settings. */
export interface DurabilityReport {
  readonly aof: boolean | null;
  readonly appendfsync: string | null;
  readonly maxmemoryPolicy: string | null;
  /** False where CONFIG is disabled or denied (managed Redis); the other fields are then null. */
  readonly configAvailable: boolean;
  readonly warnings: string[];
}

/** True for the errors managed Redis gives when CONFIG is renamed away or not permitted. */
export function isConfigUnavailable(err: unknown): boolean {
  const msg = err instanceof Error ? err.message : String(err);
  return /unknown command|NOPERM|no permissions|command not allowed|disabled/i.test(msg);
}

/**
 * Reads the settings that decide whether Redis can lose a committed session, and warns about
 * each risk. Redis is the system of record, so the caller refuses to start in strict mode when
 * `warnings` is non-empty. Connection errors propagate: they are not a durability verdict.
 */
export async function checkDurability(redis: Redis): Promise<DurabilityReport> {
  let values: Array<string | null>;
  try {
    values = await Promise.all(
      ["appendonly", "appendfsync", "maxmemory-policy"].map(async (p) => configValue(await redis.config("GET", p), p)),
    );
  } catch (e) {
    if (!isConfigUnavailable(e)) throw e;
    return {
      aof: null,
      appendfsync: null,
      maxmemoryPolicy: null,
      configAvailable: false,
      warnings: [
        `cannot read Redis persistence settings (CONFIG unavailable: ${(e as Error).message}); durability is unverified`,
      ],
    };
  }
  const [aof = null, appendfsync = null, maxmemoryPolicy = null] = values;
  const report = { aof: aof === null ? null : aof === "yes", appendfsync, maxmemoryPolicy, configAvailable: true };
  return { ...report, warnings: durabilityWarnings(report) };
}

/** The warnings for a set of persistence settings (pure, so every branch is unit-tested). */
export function durabilityWarnings(r: {
  aof: boolean | null;
  appendfsync: string | null;
  maxmemoryPolicy: string | null;
}): string[] {
  const w: string[] = [];
  if (r.aof !== true)
    w.push("Redis AOF is off (appendonly no): a crash loses every session write since the last snapshot");
  if (r.appendfsync !== "always") {
    w.push(`Redis appendfsync is ${String(r.appendfsync)}, not always: a crash can lose acknowledged commits`);
  }
  // Every key of ours has a TTL, so volatile-* policies can evict them just like allkeys-*.
  if (r.maxmemoryPolicy !== "noeviction") {
    w.push(
      `Redis maxmemory-policy is ${String(r.maxmemoryPolicy)}: under memory pressure it can evict live sessions (use noeviction)`,
    );
  }
  return w;
}

/** CONFIG GET replies as a flat [name, value] array (RESP2/legacy) or a map (RESP3); accept both. */
function configValue(reply: unknown, param: string): string | null {
  if (Array.isArray(reply)) {
    const i = reply.findIndex((x) => String(x) === param);
    return i >= 0 && reply[i + 1] !== undefined ? String(reply[i + 1]) : null;
  }
  if (reply !== null && typeof reply === "object") {
    const v = (reply as Record<string, unknown>)[param];
    return v === undefined ? null : String(v);
  }
  return null;
}

/** What the probes read about a Redis client: null when all is well, else why not. */
export interface RedisHealth {
  /** Not ready unless it takes commands now (not while connecting or reconnecting). */
  whyNotReady(): string | null;
  /** Not alive once the client has ended for good: only a restart brings it back. */
  whyDead(): string | null;
}

/** The probes' view of a client from connectRedis: its status, read without a round trip. */
export function redisHealth(redis: Redis): RedisHealth {
  return {
    whyNotReady: () => (redis.status === "ready" ? null : `redis: ${redis.status}`),
    whyDead: () => (redis.status === "end" ? "redis: connection ended for good" : null),
  };
}
