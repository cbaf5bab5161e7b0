export type {
  SessionStore,
  SessionStoreOptions,
  CommitRequest,
  CommitResult,
  LoadedSession,
  AttachResult,
} from "./types.js";
export { createRedisSessionStore, type RedisSessionStoreOptions } from "./redis.js";
export {
  connectRedis,
  checkDurability,
  redactRedisUrl,
  redisHealth,
  type ConnectRedisOptions,
  type DurabilityReport,
  type RedisHealth,
} from "./connect.js";
// The local twin, the conformance suite and test fixtures live in "@agentmesh/session-store/testing" (it imports vitest).
export {
  REDIS_USER_KINDS,
  redisAccess,
  aclRules,
  sentinelClientRules,
  renderAclFile,
  type RedisUserKind,
  type RedisAccess,
  type AclUser,
} from "./acl.js";
