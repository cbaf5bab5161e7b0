import type { HandlerContext, OfflineContext } from "@agentmesh/agent-kit";
import {
  AgentmeshError,
  HALO_LIMITS,
  HaloCitation,
  type McpAnswerRequest,
  type SpecialistAnswer,
} from "@agentmesh/contracts";
import { chooseMcpTool, clipText, type McpCallResult, type McpClient, type McpToolInfo } from "@agentmesh/tools";
import { z } from "zod";

/** The configured MCP servers' clients, by server name. */
export type McpClients = ReadonlyMap<string, McpClient>;

/**
 * The tool choice a model (or, offline, `chooseMcpTool`) makes. The arguments travel as JSON
 * text: a free-form object is not a schema strict structured output accepts.
 */
export const McpChoice = z.object({
  tool: z.string().min(1).max(128),
  arguments_json: z.string().min(2).max(30_000),
});
export type McpChoice = z.infer<typeof McpChoice>;

/** Characters of a tool's schema shown to the model; a longer one is cut (the server checks the arguments anyway). */
const MAX_SCHEMA_CHARS = 2000;
/** Tools shown to the model at most. */
const MAX_TOOLS_SHOWN = 50;

/** The client of the named server; a server not configured fails `tool_unavailable`, not retryable. */
function clientOf(clients: McpClients, server: string): McpClient {
  const client = clients.get(server);
  if (client) return client;
  const known = [...clients.keys()];
  throw new AgentmeshError(
    "tool_unavailable",
    `MCP server "${server}" is not configured (AGENTMESH_MCP_SERVERS names ${known.length ? known.join(", ") : "no server"})`,
    { retryable: false },
  );
}

/** The server's tools its `allow` gives the mcp role (least privilege: a role not named calls none). */
async function toolsForRole(client: McpClient, signal: AbortSignal | undefined): Promise<McpToolInfo[]> {
  const allow = client.config.allow.mcp;
  const tools = (await client.listTools(signal ? { signal } : {})).filter(
    (t) => allow === "*" || (allow?.includes(t.name) ?? false),
  );
  if (tools.length === 0) {
    throw new AgentmeshError(
      "tool_unavailable",
      `MCP server "${client.server}" offers the mcp role no tool (its "allow" in AGENTMESH_MCP_SERVERS must name "mcp")`,
      { retryable: false },
    );
  }
  return tools;
}

/** The model's prompt: the question and the server's tools with their input schemas. */
export function renderMcpPrompt(question: string, server: string, tools: readonly McpToolInfo[]): string {
  const listed = tools
    .slice(0, MAX_TOOLS_SHOWN)
    .map(
      (t) =>
        `- ${t.name}: ${clipText(t.description, 500) || "(no description)"}\n  input schema: ${clipText(JSON.stringify(t.inputSchema), MAX_SCHEMA_CHARS)}`,
    );
  return [
    `Question: ${question}`,
    `Tools of the MCP server "${server}":\n${listed.join("\n")}`,
    "Choose one tool and its arguments.",
  ].join("\n\n");
}

/**
 * The offline engine's choice: among the tools the question alone can call (the question as the
 * text argument, any other required argument fixed by the tool's schema), the one whose name and
 * description share most words with the question. When no tool can be called that way the
 * specialist answers `needs_model`, naming what each tool lacks, rather than call one that the
 * server would refuse.
 */
export function mcpChoiceOffline(
  clients: McpClients,
): (input: McpAnswerRequest, ctx: OfflineContext) => Promise<McpChoice> {
  return async (input, ctx) => {
    const tools = await toolsForRole(clientOf(clients, input.server), ctx.signal);
    const choice = chooseMcpTool(input.question, tools);
    if (choice.kind === "none")
      throw new AgentmeshError(
        "needs_model",
        clipText(
          `MCP server "${input.server}": ${choice.why}, so only a language model can choose the arguments. ${ctx.configHint}`,
          1000,
        ),
      );
    return { tool: choice.tool, arguments_json: JSON.stringify(choice.args) };
  };
}

/** The chosen arguments as an object; anything else is the chooser's (the model's) fault. */
function argumentsOf(choice: McpChoice, tools: readonly McpToolInfo[], server: string): Record<string, unknown> {
  if (!tools.some((t) => t.name === choice.tool)) {
    throw new AgentmeshError(
      "model_invalid_output",
      `the model chose "${clipText(choice.tool, 80)}", which is not a tool of MCP server "${server}" it may call`,
    );
  }
  let args: unknown;
  try {
    args = JSON.parse(choice.arguments_json);
  } catch {
    throw new AgentmeshError("model_invalid_output", `the model's arguments for "${choice.tool}" are not valid JSON`);
  }
  if (args === null || typeof args !== "object" || Array.isArray(args))
    throw new AgentmeshError(
      "model_invalid_output",
      `the model's arguments for "${choice.tool}" are not a JSON object`,
    );
  return args as Record<string, unknown>;
}

/** An MCP citation in halo's shape: a URL that is not a web address (a server's own scheme) is kept as a path. */
function haloCitation(c: McpCallResult["citations"][number]): HaloCitation | null {
  const where = c.url ?? c.path ?? "";
  const web = c.url !== null && /^https?:\/\//i.test(c.url) && URL.canParse(c.url);
  const candidate = {
    title: clipText(c.title.trim() || where, 300),
    url: web ? c.url : null,
    path: web ? null : clipText(where, 300) || null,
    snippet: clipText(c.snippet, 500),
  };
  const ok = HaloCitation.safeParse(candidate);
  return ok.success ? ok.data : null;
}

/** The tool's answer as a specialist's: its text (clipped), its links and resources as citations. */
export function answerOf(server: string, tool: string, result: McpCallResult): SpecialistAnswer {
  const citations = result.citations.flatMap((c) => haloCitation(c) ?? []).slice(0, HALO_LIMITS.maxCitationsPerAnswer);
  const text =
    result.text.trim() ||
    `The tool ${tool} of the MCP server ${server} returned ${citations.length ? `${citations.length} source(s) and no text` : "nothing"}.`;
  return { response_str: clipText(text, HALO_LIMITS.maxAnswerChars), citations };
}

/**
 * mcp.answer: lists the named server's tools (those its `allow` gives the mcp role), lets the
 * model (offline: `chooseMcpTool`) pick one and its arguments, calls it under the task's signal
 * and answers with its text, its links and resources as citations. A tool that refuses the call
 * fails the task with its message (`invalid_tool_input`, not retried).
 */
export async function answerViaMcp(
  clients: McpClients,
  req: McpAnswerRequest,
  ctx: Pick<HandlerContext, "complete" | "signal">,
): Promise<SpecialistAnswer> {
  const client = clientOf(clients, req.server);
  const tools = await toolsForRole(client, ctx.signal);
  const choice = await ctx.complete({
    schema: McpChoice,
    schemaName: "mcp_answer",
    prompt: renderMcpPrompt(req.question, req.server, tools),
  });
  const args = argumentsOf(choice, tools, req.server);
  // a call the tool refuses (arguments that fail its schema, or its own error result) fails at
  // once as the tool's `invalid_tool_input`: the same task delivered again would make the same call
  const result = await client.callTool(choice.tool, args, { signal: ctx.signal });
  return answerOf(req.server, choice.tool, result);
}
