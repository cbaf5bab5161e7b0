export type { Blackboard, BlackboardOptions, CommitRequest, CommitResult, LoadedSession } from "./types.js";
// implementation exports: createRedisBlackboard, createMemoryBlackboard, runBlackboardConformance (in ./testing)
