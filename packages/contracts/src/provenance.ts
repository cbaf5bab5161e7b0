import { z } from "zod";

/** Token use of one or more model calls. */
export const Usage = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  cost_usd: z.number().nonnegative(),
  model_calls: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

export const ZERO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 };

export const Tier = z.enum(["fast", "standard", "strong"]);
export type Tier = z.infer<typeof Tier>;

/** Where a step's output came from: every step event carries this. */
export const Provenance = z.object({
  role: z.string().max(40),
  op: z.string().max(40),
  model: z.string().max(200),
  tier: Tier,
  prompt_version: z.string().max(40),
  attempt: z.number().int().nonnegative(),
  usage: Usage,
  latency_ms: z.number().nonnegative(),
});
export type Provenance = z.infer<typeof Provenance>;
