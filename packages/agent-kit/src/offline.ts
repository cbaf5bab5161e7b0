import { AgentmeshError, compiled, findOp, formatZodError } from "@agentmesh/contracts";
import { DEFAULT_CONFIG_HINT, offlineKey, type OfflineHandler } from "@agentmesh/llm";
import type { AgentDefinition, OpSpec } from "./definition.js";

/**
 * The offline behaviours of the given roles, as the offline engine's handlers. Each handler
 * re-reads its input through the op's request schema, so a role's offline code receives exactly
 * the type its schema declares.
 */
export function offlineHandlersOf(
  defs: readonly AgentDefinition[],
  configHint: string = DEFAULT_CONFIG_HINT,
): Map<string, OfflineHandler> {
  const handlers = new Map<string, OfflineHandler>();
  for (const def of defs) {
    for (const [name, op] of Object.entries(def.ops as Record<string, OpSpec<unknown, unknown>>)) {
      const offline = op.offline;
      const spec = findOp(def.role, name);
      if (!offline || !spec) continue;
      handlers.set(offlineKey(def.role, name), (raw, signal) => {
        const input = compiled(spec.request).safeParse(raw);
        if (!input.success)
          throw new AgentmeshError(
            "internal",
            `offline engine: the input for ${def.role}.${name} failed its schema: ${formatZodError(input.error)}`,
          );
        return offline(input.data, { configHint, signal });
      });
    }
  }
  return handlers;
}
