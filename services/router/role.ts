import { defineAgent, renderConversation, type HandlerContext } from "@agentmesh/agent-kit";
import { RoutingResult, type RouteRequest } from "@agentmesh/contracts";
import { routeByKeywords } from "@agentmesh/offline-kit";

/** Earlier turns the router reads: enough to resolve "it" and "that", not the whole thread. */
const ROUTER_TURNS = 6;
const ROUTER_TURN_CHARS = 500;

/** The user message: the latest query and the turns before it. */
export function renderRoute(input: RouteRequest): string {
  return [
    `Earlier turns:\n${renderConversation(input.messages, { lastTurns: ROUTER_TURNS, maxTurnChars: ROUTER_TURN_CHARS })}`,
    `Latest query: ${input.query}`,
  ].join("\n\n");
}

/**
 * The router: one model call on the fast tier (json_object, temperature 0). A reply that
 * is not a valid RoutingResult fails the task as `model_invalid_output`; the workflow decides
 * what routing falls back to.
 */
export async function route(input: RouteRequest, ctx: Pick<HandlerContext, "complete">): Promise<RoutingResult> {
  return ctx.complete({
    schema: RoutingResult,
    schemaName: "router_route",
    prompt: renderRoute(input),
    mode: "json_object",
    temperature: 0,
    tier: "fast",
  });
}

/** The router role: picks the supervisor's agent for a query. */
export default defineAgent({
  role: "router",
  description:
    "Routes a query to the supervisor's chat, research, code, writing or data agent: {agent, confidence, reason}",
  ops: {
    route: {
      kind: "handler",
      version: "router.route/1",
      contract: "router.route",
      run: route,
      summarize: (o) => `${o.agent} (confidence ${o.confidence})`,
      // the handler's one model call, answered offline by cue words
      offline: (input: RouteRequest) => routeByKeywords(input.query),
    },
  },
});
