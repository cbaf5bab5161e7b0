export type { Blackboard, BlackboardOptions, CommitRequest, CommitResult, LoadedSession } from "./types.js";
export { createRedisBlackboard, type RedisBlackboardOptions } from "./redis.js";
export { createMemoryBlackboard, type MemoryBlackboardOptions } from "./memory.js";
export { connectRedis, checkDurability, redactRedisUrl, type ConnectRedisOptions, type DurabilityReport } from "./connect.js";
// The conformance suite and test fixtures live in "@agentmesh/blackboard/testing" (it imports vitest).
