import { CONNECTION_VARS, configError, connectionConfig, parseEnv, type NatsAccess } from "@agentmesh/service-kit";
import type { RuntimeDefaults } from "@agentmesh/workflows";

const NAMES = [
  ...CONNECTION_VARS, "LOG_LEVEL", "AGENTMESH_CRASH_AT",
  "AGENTMESH_TASK_ACK_WAIT_MS", "AGENTMESH_INBOX_ACK_WAIT_MS", "AGENTMESH_TASK_MAX_DELIVER", "AGENTMESH_TASK_DEADLINE_MS", "AGENTMESH_SESSION_DEADLINE_MS", "AGENTMESH_PAUSE_TIMEOUT_MS",
  "AGENTMESH_MAX_STEPS", "AGENTMESH_MAX_TOKENS", "AGENTMESH_MAX_COST_USD", "AGENTMESH_MAX_WALL_MS", "AGENTMESH_COORDINATOR_CONCURRENCY",
  "AGENTMESH_MAX_STEPS_CEILING", "AGENTMESH_MAX_TOKENS_CEILING", "AGENTMESH_MAX_COST_USD_CEILING", "AGENTMESH_MAX_WALL_MS_CEILING",
  "AGENTMESH_SESSION_TTL_MS", "AGENTMESH_FINISHED_TTL_MS", "AGENTMESH_REQUIRE_DURABLE",
  "AGENTMESH_CANCELLED_TTL_MS",
] as const;

/** Everything a coordinator needs, parsed once at start-up and frozen. */
export interface CoordinatorConfig {
  readonly natsUrl: string;
  /** NKey seed file and TLS files for the NATS connection. */
  readonly nats: NatsAccess;
  readonly redisUrl: string;
  /** CA file for a `rediss://` server (REDIS_TLS_CA). */
  readonly redisTlsCa: string | undefined;
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
  readonly cancelledTtlMs: number;
  readonly requireDurable: boolean;
}

/** Reads the coordinator configuration, listing every problem at once. */
export function loadCoordinatorConfig(env: Record<string, string | undefined>): CoordinatorConfig {
  const e = parseEnv(NAMES, env);
  const budgets = {
    max_steps: e.AGENTMESH_MAX_STEPS,
    max_tokens: e.AGENTMESH_MAX_TOKENS ?? null,
    max_cost_usd: e.AGENTMESH_MAX_COST_USD ?? null,
    max_wall_ms: e.AGENTMESH_MAX_WALL_MS ?? null,
  };
  const ceilings = {
    max_steps: e.AGENTMESH_MAX_STEPS_CEILING,
    max_tokens: e.AGENTMESH_MAX_TOKENS_CEILING,
    max_cost_usd: e.AGENTMESH_MAX_COST_USD_CEILING,
    max_wall_ms: e.AGENTMESH_MAX_WALL_MS_CEILING,
  };
  // A default above its ceiling would be silently lowered: say so at start-up instead.
  const problems = (Object.keys(budgets) as Array<keyof typeof budgets>)
    .filter((k) => budgets[k] !== null && (budgets[k] as number) > ceilings[k])
    .map((k) => `the default ${k} ${String(budgets[k])} is above its ceiling ${ceilings[k]} (AGENTMESH_${k.toUpperCase()}_CEILING)`);
  if (e.AGENTMESH_PAUSE_TIMEOUT_MS >= e.AGENTMESH_SESSION_TTL_MS) {
    // Otherwise a paused session's keys expire first and it vanishes with no terminal event.
    problems.push(`AGENTMESH_PAUSE_TIMEOUT_MS ${e.AGENTMESH_PAUSE_TIMEOUT_MS} must be below AGENTMESH_SESSION_TTL_MS ${e.AGENTMESH_SESSION_TTL_MS}`);
  }
  if (problems.length) throw configError(problems);
  return Object.freeze({
    ...connectionConfig(e),
    logLevel: e.LOG_LEVEL,
    crashAt: e.AGENTMESH_CRASH_AT,
    concurrency: e.AGENTMESH_COORDINATOR_CONCURRENCY,
    taskAckWaitMs: e.AGENTMESH_TASK_ACK_WAIT_MS,
    inboxAckWaitMs: e.AGENTMESH_INBOX_ACK_WAIT_MS,
    taskMaxDeliver: e.AGENTMESH_TASK_MAX_DELIVER,
    defaults: {
      budgets,
      ceilings,
      taskDeadlineMs: e.AGENTMESH_TASK_DEADLINE_MS,
      sessionDeadlineMs: e.AGENTMESH_SESSION_DEADLINE_MS,
      pauseTimeoutMs: e.AGENTMESH_PAUSE_TIMEOUT_MS,
    },
    activeTtlMs: e.AGENTMESH_SESSION_TTL_MS,
    finishedTtlMs: e.AGENTMESH_FINISHED_TTL_MS,
    cancelledTtlMs: e.AGENTMESH_CANCELLED_TTL_MS,
    requireDurable: e.AGENTMESH_REQUIRE_DURABLE,
  });
}
