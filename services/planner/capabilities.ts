import type { HandlerContext } from "@agentmesh/agent-kit";
import {
  AgentmeshError,
  CapabilityPlan,
  type Capability,
  type CapabilitiesRequest,
  type CapabilitiesResult,
} from "@agentmesh/contracts";
import { clip, pickCapabilities } from "@agentmesh/offline-kit";

/** The tags the model may pick from: what the deployment serves, and chitchat, which every deployment serves. */
export function offeredCapabilities(available: readonly Capability[]): Capability[] {
  return available.includes("chitchat") ? [...available] : [...available, "chitchat"];
}

/** The user message: the question and the tags this deployment can serve. */
export function renderCapabilities(input: CapabilitiesRequest): string {
  return [
    `Question: ${input.question}`,
    `Available capabilities: ${offeredCapabilities(input.available).join(", ")}`,
  ].join("\n\n");
}

/**
 * The structured planner: exactly one model call (json_object, temperature 0, no
 * validation retry). A reply that is not a valid plan (not JSON, an unknown tag) is a normal
 * outcome, an empty plan with its reason, which the workflow turns into `["chitchat"]`; any other
 * failure (transport, cancel) fails the task. A valid plan is returned as given, repeats kept.
 */
export async function planCapabilities(
  input: CapabilitiesRequest,
  ctx: Pick<HandlerContext, "complete">,
): Promise<CapabilitiesResult> {
  try {
    const plan = await ctx.complete({
      schema: CapabilityPlan,
      schemaName: "planner_capabilities",
      prompt: renderCapabilities(input),
      mode: "json_object",
      temperature: 0,
    });
    return { capabilities: plan.capabilities, invalid_reason: null };
  } catch (err) {
    if (err instanceof AgentmeshError && err.code === "model_invalid_output")
      return { capabilities: [], invalid_reason: clip(err.message, 500) };
    throw err;
  }
}

/** Offline: the tags whose cue words the question mentions, among those available (offline-kit). */
export function capabilitiesOffline(input: CapabilitiesRequest): CapabilityPlan {
  return { capabilities: pickCapabilities(input.question, input.available) };
}

/** One line for the log: the plan, or why there is none. */
export function summarizeCapabilities(o: CapabilitiesResult): string {
  if (o.invalid_reason !== null) return `no valid plan: ${clip(o.invalid_reason, 120)}`;
  return o.capabilities.length ? `capabilities: ${o.capabilities.join(", ")}` : "an empty plan";
}
