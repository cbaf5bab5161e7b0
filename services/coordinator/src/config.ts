import { NATS_ACCESS_VARS, natsAccess, parseEnv, type NatsAccess } from "@agentmesh/service-kit";
import type { RuntimeDefaults } from "@agentmesh/workflows";

const NAMES = [
  "NATS_URL", "REDIS_URL", "AGENTMESH_PREFIX", "LOG_LEVEL", "AGENTMESH_CRASH_AT",
  "AGENTMESH_TASK_ACK_WAIT_MS", "AGENTMESH_INBOX_ACK_WAIT_MS", "AGENTMESH_TASK_MAX_DELIVER", "AGENTMESH_TASK_DEADLINE_MS", "AGENTMESH_SESSION_DEADLINE_MS",
  "AGENTMESH_MAX_STEPS", "AGENTMESH_MAX_TOKENS", "AGENTMESH_MAX_COST_USD", "AGENTMESH_MAX_WALL_MS", "AGENTMESH_COORDINATOR_CONCURRENCY",
  "AGENTMESH_SESSION_TTL_MS", "AGENTMESH_FINISHED_TTL_MS", "AGENTMESH_REQUIRE_DURABLE",
  ...NATS_ACCESS_VARS,
] as const;

/** Everything a coordinator needs, parsed once at start-up and frozen. */
export interface CoordinatorConfig {
  readonly natsUrl: string;
  /** NKey seed file and TLS files for the NATS connection. */
  readonly nats: NatsAccess;
  readonly redisUrl: string;
  readonly prefix: string;
  readonly logLevel: string;
  readonly crashAt: string | undefined;
  readonly concurrency: number;
  readonly taskAckWaitMs: number;
  readonly inboxAckWaitMs: number;
  readonly taskMaxDeliver: number;
  readonly defaults: RuntimeDefaults;
  readonly activeTtlMs: number;
  readonly finishedTtlMs: number;
  readonly requireDurable: boolean;
}

/** Reads the coordinator configuration, listing every problem at once. */
export function loadCoordinatorConfig(env: Record<string, string | undefined>): CoordinatorConfig {
  const e = parseEnv(NAMES, env);
  return Object.freeze({
    natsUrl: e.NATS_URL,
    nats: natsAccess(e),
    redisUrl: e.REDIS_URL,
    prefix: e.AGENTMESH_PREFIX,
    logLevel: e.LOG_LEVEL,
    crashAt: e.AGENTMESH_CRASH_AT,
    concurrency: e.AGENTMESH_COORDINATOR_CONCURRENCY,
    taskAckWaitMs: e.AGENTMESH_TASK_ACK_WAIT_MS,
    inboxAckWaitMs: e.AGENTMESH_INBOX_ACK_WAIT_MS,
    taskMaxDeliver: e.AGENTMESH_TASK_MAX_DELIVER,
    defaults: {
      budgets: {
        max_steps: e.AGENTMESH_MAX_STEPS,
        max_tokens: e.AGENTMESH_MAX_TOKENS ?? null,
        max_cost_usd: e.AGENTMESH_MAX_COST_USD ?? null,
        max_wall_ms: e.AGENTMESH_MAX_WALL_MS ?? null,
      },
      taskDeadlineMs: e.AGENTMESH_TASK_DEADLINE_MS,
      sessionDeadlineMs: e.AGENTMESH_SESSION_DEADLINE_MS,
    },
    activeTtlMs: e.AGENTMESH_SESSION_TTL_MS,
    finishedTtlMs: e.AGENTMESH_FINISHED_TTL_MS,
    requireDurable: e.AGENTMESH_REQUIRE_DURABLE,
  });
}
