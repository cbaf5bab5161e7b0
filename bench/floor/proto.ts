// The floor's own names, settings and messages, shared by the bench (bench/floor/floor.ts), the
// drivers (driver.ts) and the worker (worker.ts). The floor imports nothing of @agentmesh and
// nothing else of the repository: it is what the same clients cost with no runtime around them.
import { readFileSync } from "node:fs";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";

/** Where a floor process finds the servers and its names (from its environment, set by the bench). */
export interface FloorEnv {
  readonly natsUrl: string;
  /** The NKey seed of the bench's own NATS user, under access control; null with an open server. */
  readonly seedFile: string | null;
  readonly redisUrl: string;
  /** The run's unique prefix; every stream, subject and key of the floor lives under it. */
  readonly prefix: string;
}

/** The floor's streams, consumers, subjects and Redis keys under one run prefix. */
export interface FloorNames {
  readonly tasksStream: string;
  readonly resultsStream: string;
  readonly tasksSubject: string;
  /** Every driver's results subject (the results stream's subjects). */
  readonly resultsAll: string;
  resultsOf(driver: number): string;
  readonly workerConsumer: string;
  driverConsumer(driver: number): string;
  readonly keyPrefix: string;
}

export function floorNames(prefix: string): FloorNames {
  const stream = prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_");
  return {
    tasksStream: `${stream}_FLOOR_TASKS`,
    resultsStream: `${stream}_FLOOR_RESULTS`,
    tasksSubject: `${prefix}.floor.tasks`,
    resultsAll: `${prefix}.floor.results.>`,
    resultsOf: (driver: number) => `${prefix}.floor.results.${driver}`,
    workerConsumer: "floor-worker",
    driverConsumer: (driver: number) => `floor-driver-${driver}`,
    keyPrefix: `${prefix}floor:`,
  };
}

/** The environment variables the bench sets for a floor process. */
export const FLOOR_ENV = {
  nats: "FLOOR_NATS_URL",
  seed: "FLOOR_NATS_SEED_FILE",
  redis: "FLOOR_REDIS_URL",
  prefix: "FLOOR_PREFIX",
  driver: "FLOOR_DRIVER",
} as const;

/** Reads a floor process's environment; exits with one line when something is missing. */
export function floorEnv(): FloorEnv {
  const get = (k: string) => process.env[k] ?? "";
  const env = {
    natsUrl: get(FLOOR_ENV.nats),
    seedFile: get(FLOOR_ENV.seed) || null,
    redisUrl: get(FLOOR_ENV.redis),
    prefix: get(FLOOR_ENV.prefix),
  };
  const missing = [FLOOR_ENV.nats, FLOOR_ENV.redis, FLOOR_ENV.prefix].filter((k) => !get(k));
  if (missing.length) {
    process.stderr.write(`floor: missing ${missing.join(", ")} (the floor's processes are started by pnpm bench)\n`);
    process.exit(2);
  }
  return env;
}

/** Connects with the same client options the services use where they matter (no async stack traces). */
export async function floorConnect(env: FloorEnv, name: string): Promise<NatsConnection> {
  // one URL or a cluster's, comma-separated (the client takes host:port; credentials come from the first)
  const urls = env.natsUrl.split(",").map((s) => new URL(s.includes("://") ? s.trim() : `nats://${s.trim()}`));
  const servers = urls.map((u) => u.host);
  const user = urls[0]?.username || undefined;
  const pass = urls[0]?.password || undefined;
  const seed = env.seedFile ? readFileSync(env.seedFile, "utf8").trim() : null;
  return connect({
    servers,
    user,
    pass,
    ...(seed ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)) } : {}),
    name,
    noAsyncTraces: true,
  });
}

/** A task on the work queue: which session and step, and where the worker sends its result. */
export interface FloorTask {
  readonly sid: string;
  readonly step: number;
  /** The session's version the driver read; the worker echoes it. */
  readonly version: number;
  readonly input: string;
  readonly reply: string;
}

/** The worker's result for one task. */
export interface FloorResult {
  readonly sid: string;
  readonly step: number;
  readonly version: number;
  readonly output: string;
}

/** bench → driver: run these sessions, at most `concurrency` at a time, `steps` durable steps each. */
export interface FloorRun {
  readonly type: "run";
  readonly runId: number;
  readonly stem: string;
  readonly sessions: number;
  readonly concurrency: number;
  readonly steps: number;
}

/** driver → bench: a run's step latencies (ms, performance.now) and what went wrong. */
export interface FloorDone {
  readonly type: "done";
  readonly runId: number;
  readonly stepMs: number[];
  readonly sessionsOk: number;
  readonly problems: string[];
  /** Results that matched no waiting step (redeliveries, duplicates). */
  readonly strays: number;
}

/** A floor process → the bench. */
export type FloorReport = { readonly type: "ready" } | FloorDone;
