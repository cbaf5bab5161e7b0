import { ErrorCode, RoleName, ToolFlags } from "@agentmesh/contracts";
import { z } from "zod";

/**
 * One line of the ToolPerformanceLog: one attempt of one tool call, or the refusal of a call
 * before any attempt (`attempt` 0: unknown tool, role not allowed, bad input, session cap).
 */
export const ToolCallRecord = z.object({
  tool: z.string().max(80),
  sessionId: z.string().max(200),
  taskId: z.string().max(200),
  role: RoleName,
  /** sha256 (hex) of the canonical JSON of the arguments as the caller sent them. */
  argsDigest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  attempt: z.number().int().min(0).max(3),
  startedAt: z.string(),
  latencyMs: z.number().nonnegative(),
  outcome: z.union([z.literal("ok"), ErrorCode]),
  /** Whether the failure could be retried (null on success). */
  retryable: z.boolean().nullable(),
  message: z.string().max(500).nullable(),
  /** Delay slept before the next attempt; null when there is none. */
  backoffMs: z.number().nonnegative().nullable(),
  /** Names of the dangerous patterns seen in the arguments: recorded, never enforced. */
  flags: ToolFlags,
});
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;
