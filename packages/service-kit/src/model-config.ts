import { z } from "zod";
import { findOp, ROLE_NAMES } from "@agentmesh/contracts";

const Tier = z.enum(["fast", "standard", "strong"]);
type RoleModel = { model: string; temperature: number; tier: "fast" | "standard" | "strong" };

const ENTRY = /^([a-z_]+)(?:\.([a-z_]+))?=([^@/]+)(?:@([0-9.]+))?(?:\/(fast|standard|strong))?$/;

/**
 * Parses `key=model@temperature/tier,…` (temperature and tier optional), where a key is a role
 * (`critic`) or one op of a role (`planner.capabilities`), which wins over its role's entry.
 * Throws, naming every bad entry, on one it cannot read or a role or op the registry lacks.
 */
export function parseRoleModels(spec: string, defaults: RoleModel): Record<string, RoleModel> {
  const out: Record<string, RoleModel> = {};
  const problems: string[] = [];
  for (const part of spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = ENTRY.exec(part);
    if (!m) {
      problems.push(`cannot read "${part}" (expected role=model@temperature/tier or role.op=model@temperature/tier)`);
      continue;
    }
    const [, role, op, model, temp, tier] = m as unknown as [
      string,
      string,
      string | undefined,
      string,
      string | undefined,
      string | undefined,
    ];
    const temperature = temp === undefined ? defaults.temperature : Number(temp);
    if (!(temperature >= 0 && temperature <= 2)) problems.push(`"${part}": temperature must be between 0 and 2`);
    else if (!(ROLE_NAMES as readonly string[]).includes(role)) problems.push(`"${part}": no role ${role}`);
    else if (op !== undefined && !findOp(role, op)) problems.push(`"${part}": the ${role} role has no op ${op}`);
    else
      out[op === undefined ? role : `${role}.${op}`] = {
        model,
        temperature,
        tier: tier === undefined ? defaults.tier : Tier.parse(tier),
      };
  }
  if (problems.length) throw new Error(`AGENTMESH_ROLE_MODELS: ${problems.join("; ")}`);
  return out;
}

/** Parses `model=input/output,…` in USD per million tokens. */
export function parsePrices(spec: string): Record<string, { input_per_mtok: number; output_per_mtok: number }> {
  const out: Record<string, { input_per_mtok: number; output_per_mtok: number }> = {};
  for (const part of spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(.+)=([0-9.]+)\/([0-9.]+)$/.exec(part);
    if (!m) throw new Error(`AGENTMESH_LLM_PRICES: cannot read "${part}" (expected model=input/output)`);
    out[m[1] as string] = { input_per_mtok: Number(m[2]), output_per_mtok: Number(m[3]) };
  }
  return out;
}
