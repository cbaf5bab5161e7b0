import { z } from "zod";
import { createComputePool, type ComputePool } from "../compute-pool.js";
import { defineTool, type ToolDefinition } from "../registry.js";
import type { RoleName } from "@agentmesh/contracts";
import { packageFile } from "../files.js";

/** Options of the `calculator` tool. */
export interface CalculatorOptions {
  readonly allowedRoles: readonly RoleName[];
  readonly timeoutMs?: number;
  /** Heap of the worker that evaluates; a matrix bigger than this fails as `resource_exhausted`. */
  readonly maxHeapMb?: number;
  readonly maxResultChars?: number;
  readonly workers?: number;
}

const Input = z.object({ expression: z.string().min(1).max(2000) });
const Output = z.object({ result: z.string(), type: z.string().max(40), truncated: z.boolean() });

/** The calculator tool and the pool to close when the process stops. */
export function createCalculatorTool(opts: CalculatorOptions): {
  tool: ToolDefinition<typeof Input, typeof Output>;
  pool: ComputePool;
} {
  const pool = createComputePool({
    url: packageFile("./builtins/calculator.worker.mjs"),
    size: opts.workers ?? 1,
    warm: true,
    resourceLimits: { maxOldGenerationSizeMb: opts.maxHeapMb ?? 128, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
  });
  const maxChars = opts.maxResultChars ?? 10_000;
  const tool = defineTool({
    name: "calculator",
    description:
      "Evaluate a math expression exactly (64-digit decimals: 0.1 + 0.2 = 0.3). Supports arithmetic, powers, " +
      "functions (sqrt, sin, log, factorial...), matrices and units ('5 cm to inch'). No code execution.",
    input: Input,
    output: Output,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? 5000,
    // the same expression gives the same answer: a timeout will not go better the second time
    retry: { nonRetryable: ["timeout"] },
    async execute(input, ctx) {
      return Output.parse(await pool.run({ expression: input.expression, maxChars }, ctx.signal));
    },
  });
  return { tool, pool };
}
