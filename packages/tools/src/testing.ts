// Test helpers for packages that use tools: a tool that follows a script, and a web search
// provider with fixed answers. Not for production wiring.
import { AgentmeshError, type ErrorCode, type RoleName } from "@agentmesh/contracts";
import { z } from "zod";
import { defineTool, type RetryPolicy, type ToolContext, type ToolDefinition } from "./registry.js";
import type { WebSearchHit, WebSearchProvider } from "./builtins/web-search.js";

/** One step of a scripted tool: answer, fail with a code, or never answer (until aborted). */
export type ScriptStep =
  | { readonly output: unknown }
  | { readonly fail: ErrorCode; readonly retryable?: boolean; readonly message?: string }
  | { readonly hang: true };

/** Options of a scripted tool. */
export interface ScriptedToolOptions {
  readonly name: string;
  readonly script: readonly ScriptStep[];
  readonly allowedRoles?: readonly RoleName[];
  readonly input?: z.ZodType;
  readonly output?: z.ZodType;
  readonly timeoutMs?: number;
  readonly retry?: Partial<RetryPolicy>;
  readonly sideEffects?: boolean;
}

/** A tool that plays its script, one step per attempt (the last step repeats), recording each context. */
export function scriptedTool(
  opts: ScriptedToolOptions,
): ToolDefinition & { readonly calls: ToolContext[]; readonly aborted: () => number } {
  const calls: ToolContext[] = [];
  let aborted = 0;
  const tool = defineTool({
    name: opts.name,
    description: `scripted test tool ${opts.name}`,
    input: opts.input ?? z.unknown(),
    output: opts.output ?? z.unknown(),
    allowedRoles: opts.allowedRoles ?? ["researcher", "expert"],
    timeoutMs: opts.timeoutMs,
    retry: opts.retry,
    sideEffects: opts.sideEffects,
    async execute(_input: unknown, ctx: ToolContext): Promise<unknown> {
      calls.push(ctx);
      const step = opts.script[Math.min(calls.length, opts.script.length) - 1];
      if (!step) throw new Error("empty script");
      if ("hang" in step) {
        return new Promise((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            aborted++;
            reject(ctx.signal.reason as Error);
          });
        });
      }
      if ("fail" in step)
        throw new AgentmeshError(step.fail, step.message ?? `scripted ${step.fail}`, { retryable: step.retryable });
      return step.output;
    },
  });
  return Object.assign(tool, { calls, aborted: () => aborted });
}

/** A web search provider that answers every query with the same hits. */
export function createStaticWebSearch(hits: readonly WebSearchHit[]): WebSearchProvider {
  return {
    name: "static",
    async search(_query, { count }) {
      return hits.slice(0, count);
    },
  };
}

// The test MCP servers (SDK-built, over stdio and streamable HTTP), for the roles' tests.
export { startHttpTestServer, stdioTestServer, type HttpTestServer } from "./test-support/mcp/servers.js";
