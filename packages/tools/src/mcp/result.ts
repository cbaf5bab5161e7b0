import { fileURLToPath } from "node:url";
import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { clipText } from "../text.js";

/** A source an MCP tool's answer pointed to: a web address or a local file, with what it said. */
export const McpCitation = z.object({
  title: z.string().max(300),
  url: z.string().max(2000).nullable(),
  path: z.string().max(1000).nullable(),
  snippet: z.string().max(500),
});
export type McpCitation = z.infer<typeof McpCitation>;

/** An MCP tool's answer as agentmesh uses it: its text, and its links and resources as citations. */
export const McpCallResult = z.object({
  text: z.string().max(16_000),
  citations: z.array(McpCitation).max(50),
});
export type McpCallResult = z.infer<typeof McpCallResult>;

/** Where a resource URI points: `file:` URIs are paths, anything else (http, a server's own scheme) an address. */
function locate(uri: string): { url: string | null; path: string | null } {
  if (uri.startsWith("file:")) {
    try {
      return { url: null, path: fileURLToPath(uri).slice(0, 1000) };
    } catch {
      // a malformed file URI is still worth citing by its text
    }
  }
  return { url: uri.slice(0, 2000), path: null };
}

/** The last segment of a URI, as a title for a resource that has none. */
function uriTitle(uri: string): string {
  const tail = uri
    .replace(/[?#].*$/, "")
    .replace(/\/+$/, "")
    .split("/")
    .pop();
  return tail || uri;
}

function citationOf(block: ContentBlock): McpCitation | null {
  switch (block.type) {
    case "resource_link":
      return {
        title: clipText(block.title ?? block.name, 300),
        ...locate(block.uri),
        snippet: clipText(block.description ?? "", 500),
      };
    case "resource": {
      const r = block.resource;
      return {
        title: clipText(uriTitle(r.uri), 300),
        ...locate(r.uri),
        snippet: "text" in r ? clipText(r.text, 500) : "",
      };
    }
    case "text":
    case "image":
    case "audio":
      return null;
  }
}

/**
 * Maps a tool result's content: text blocks joined into the answer (images and audio dropped),
 * resource links and embedded resources into citations, one per address or path.
 */
export function mapCallResult(result: Pick<CallToolResult, "content">): McpCallResult {
  const text: string[] = [];
  const citations: McpCitation[] = [];
  const seen = new Set<string>();
  for (const block of result.content) {
    if (block.type === "text") {
      if (block.text.trim()) text.push(block.text.trim());
      continue;
    }
    const c = citationOf(block);
    const key = c && (c.url ?? c.path ?? "");
    if (c && key && !seen.has(key) && citations.length < 50) {
      seen.add(key);
      citations.push(c);
    }
  }
  const joined = text.join("\n\n");
  return { text: joined.length <= 16_000 ? joined : `${joined.slice(0, 15_999)}…`, citations };
}

/** The text of a result, for the message of a tool that reported an error. */
export function resultText(result: Pick<CallToolResult, "content">, max = 500): string {
  return clipText(result.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(" "), max);
}
