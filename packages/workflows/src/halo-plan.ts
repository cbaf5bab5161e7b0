import { CapabilityPlan, formatZodError, type Capability } from "@agentmesh/contracts";

/** The fallback plan: a normal path (not a failed task) for anything the planner got wrong. */
export const FALLBACK_PLAN: readonly Capability[] = ["chitchat"];

/** A capability plan and, when it is the fallback, why. */
export interface PlanOutcome {
  readonly capabilities: readonly Capability[];
  /** Null when the plan is what was asked for (de-duplicated, unavailable tags left out). */
  readonly fallback: string | null;
}

const fallback = (reason: string): PlanOutcome => ({ capabilities: FALLBACK_PLAN, fallback: reason });

/**
 * Keeps the first of each tag, in order, and only those the deployment can serve (`available`;
 * chitchat always can); nothing left is the fallback.
 */
function servablePlan(tags: readonly Capability[], available: readonly Capability[]): PlanOutcome {
  const plan: Capability[] = [];
  for (const tag of tags) if (!plan.includes(tag) && (tag === "chitchat" || available.includes(tag))) plan.push(tag);
  if (plan.length > 0) return { capabilities: plan, fallback: null };
  return fallback(tags.length === 0 ? "the plan is empty" : `this deployment serves none of ${tags.join(", ")}`);
}

/** `{"capabilities": [...]}` checked against the capability tags; any unknown tag fails the whole plan. */
function validPlan(value: unknown): { ok: true; tags: readonly Capability[] } | { ok: false; reason: string } {
  const parsed = CapabilityPlan.safeParse(value);
  return parsed.success
    ? { ok: true, tags: parsed.data.capabilities }
    : { ok: false, reason: `not a capability plan: ${formatZodError(parsed.error, 400)}` };
}

/**
 * The planner's answer as a plan: `raw` is the model's text (or the JSON value it parsed to).
 * Invalid JSON, a plan that fails the schema (an unknown tag), an empty list or nothing this
 * deployment can serve gives `["chitchat"]`; otherwise the tags, de-duplicated in order.
 */
export function parseCapabilityPlan(raw: unknown, available: readonly Capability[]): PlanOutcome {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw.trim() || "{}");
    } catch {
      return fallback("the planner's output is not JSON");
    }
  }
  const plan = validPlan(value);
  return plan.ok ? servablePlan(plan.tags, available) : fallback(plan.reason);
}

/**
 * A plan given in the request (`options.capabilities`, an override for experiments),
 * its tags already checked where the request came in: used instead of the planner, so no model
 * is called; de-duplicated in order, and a tag this deployment cannot serve left out, since the
 * workflow never dispatches one (nothing left, or an empty list, is the fallback).
 */
export function overridePlan(requested: readonly Capability[], available: readonly Capability[]): PlanOutcome {
  return servablePlan(requested, available);
}
