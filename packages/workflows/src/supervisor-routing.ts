import {
  LOW_ROUTING_CONFIDENCE,
  type RoutingDecision,
  type RoutingResult,
  type SupervisorAgent,
} from "@agentmesh/contracts";

/** Where the agent comes from: the client's explicit `mode` (the model is not asked) or the router's validated output. */
export type RoutingInput = { readonly mode: SupervisorAgent } | { readonly routed: RoutingResult };

/**
 * The routing decision: an explicit `mode` bypasses the router with confidence 1 and a
 * reason that says so; otherwise the router's output as it came. Either way `is_low_confidence`
 * is set when the confidence is under LOW_ROUTING_CONFIDENCE (flagged, not re-routed).
 */
export function routingDecision(input: RoutingInput): RoutingDecision {
  const result: RoutingResult =
    "mode" in input
      ? { agent: input.mode, confidence: 1, reason: `explicit mode "${input.mode}" (the router was not asked)` }
      : input.routed;
  return { ...result, is_low_confidence: result.confidence < LOW_ROUTING_CONFIDENCE };
}
