import { z } from "zod";

const Tier = z.enum(["fast", "standard", "strong"]);

/** Parses `role=model@temperature/tier,…` (temperature and tier optional). Throws on a bad entry. */
export function parseRoleModels(spec: string, defaults: { model: string; temperature: number; tier: "fast" | "standard" | "strong" }) {
  const out: Record<string, { model: string; temperature: number; tier: "fast" | "standard" | "strong" }> = {};
  for (const part of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const m = /^([a-z_]+)=([^@/]+)(?:@([0-9.]+))?(?:\/(fast|standard|strong))?$/.exec(part);
    if (!m) throw new Error(`AGENTMESH_ROLE_MODELS: cannot read "${part}" (expected role=model@temperature/tier)`);
    const [, role, model, temp, tier] = m as unknown as [string, string, string, string | undefined, string | undefined];
    out[role] = {
      model,
      temperature: temp === undefined ? defaults.temperature : Number(temp),
      tier: tier === undefined ? defaults.tier : Tier.parse(tier),
    };
  }
  return out;
}

/** Parses `model=input/output,…` in USD per million tokens. */
export function parsePrices(spec: string): Record<string, { input_per_mtok: number; output_per_mtok: number }> {
  const out: Record<string, { input_per_mtok: number; output_per_mtok: number }> = {};
  for (const part of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const m = /^(.+)=([0-9.]+)\/([0-9.]+)$/.exec(part);
    if (!m) throw new Error(`AGENTMESH_LLM_PRICES: cannot read "${part}" (expected model=input/output)`);
    out[m[1] as string] = { input_per_mtok: Number(m[2]), output_per_mtok: Number(m[3]) };
  }
  return out;
}
