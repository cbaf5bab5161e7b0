import { renderConversation } from "@agentmesh/agent-kit";
import { mayCall } from "@agentmesh/offline-kit";
import { AgentmeshError, type AgentAction, type ChatRespondRequest, type OfferedTool } from "@agentmesh/contracts";
import { z } from "zod";

/** A tool call as the model writes it: the whole reply is this one JSON object. */
const ToolCallText = z.object({ tool: z.string().min(1), arguments: z.record(z.string(), z.unknown()) });

/** The tools the model may call this turn: none once the tool rounds are used up. */
export function offeredTools(input: ChatRespondRequest): readonly OfferedTool[] {
  return input.tool_rounds_left > 0 ? input.tools : [];
}

const invalid = (why: string) =>
  new AgentmeshError("model_invalid_output", `chat.respond: ${why}`, { retryable: true });

/** A reply that is one fenced block whose body is a JSON object: that body; null otherwise. */
function fencedObject(reply: string): unknown {
  const m = /^```[^\n]*\n\s*(\{[\s\S]*?)\s*```\s*$/.exec(reply);
  if (!m) return null;
  try {
    return JSON.parse(m[1] ?? "");
  } catch {
    return null;
  }
}

/**
 * The chat agent's move from the model's whole reply. A reply that starts with `{` is a tool call
 * and must be `{"tool", "arguments"}`, else it is invalid output (retryable: the model may do
 * better); so is a reply that is one fenced block holding such an object (models often fence their
 * JSON), while any other fenced block (a JSON answer) is prose. A call must name one of its tools
 * (rounds left or not) or a handoff tool, both of which the workflow decides. Any other reply is
 * the answer, from its first non-whitespace character on: exactly the text `proseOnly` streamed
 * (or nothing of it, for a fenced `{`), so the gateway's stream is a prefix of the final answer.
 */
export function toAgentAction(text: string, input: ChatRespondRequest): AgentAction {
  const reply = text.trimStart();
  let json: unknown;
  if (reply.startsWith("{")) {
    try {
      json = JSON.parse(reply);
    } catch {
      throw invalid("the reply starts like a tool call but is not valid JSON");
    }
  } else {
    json = fencedObject(reply);
    if (!ToolCallText.safeParse(json).success) return { action: "answer", text: reply };
  }
  const call = ToolCallText.safeParse(json);
  if (!call.success) throw invalid('a tool call must be {"tool": "<name>", "arguments": {...}}');
  // Checked against all its tools, rounds left or not: at zero rounds the workflow ends the chat with what it found.
  if (!mayCall(call.data.tool, input.tools)) {
    const names = input.tools.map((t) => t.name).join(", ");
    throw invalid(`the model called ${call.data.tool.slice(0, 80)}, which was not offered (${names || "none"})`);
  }
  return { action: "tool", tool: call.data.tool, arguments: call.data.arguments };
}

const section = (title: string, body: string) => `${title}:\n${body}`;

/** The user message: conversation, brief, offered tools and what the tools said so far. */
export function renderRespond(input: ChatRespondRequest): string {
  const { brief } = input;
  const offered = offeredTools(input);
  const parts = [
    section("Conversation so far", renderConversation(input.messages)),
    section("Your task", brief.task),
    brief.task === brief.query ? "" : section("The user's query", brief.query),
    brief.handoff_context ? section("Context from the agent that handed this over", brief.handoff_context) : "",
    brief.memory ? section("What the other agents found (shared memory)", brief.memory) : "",
    offered.length
      ? section(
          `Tools you may call (${input.tool_rounds_left} tool round(s) left)`,
          offered.map((t) => `- ${t.name}: ${t.description}`).join("\n"),
        )
      : "No tools this turn: answer now, in plain text.",
    input.observations.length
      ? section(
          "Tool results so far, oldest first",
          input.observations
            .map(
              (o, i) =>
                `[${i + 1}] ${o.tool} ${JSON.stringify(o.arguments)} ${o.ok ? "returned" : "failed"}:\n${o.content}`,
            )
            .join("\n\n"),
        )
      : "",
  ];
  return parts.filter(Boolean).join("\n\n");
}
