import type { McpToolInfo } from "./client.js";

/** The tool the offline chooser picked, and the arguments to call it with. */
export interface McpToolChoice {
  readonly tool: string;
  readonly args: Record<string, string>;
  /** Words the question shares with the tool's name and description. */
  readonly shared: number;
}

// words too common to say anything about which tool fits
const STOP = new Set([
  "a",
  "about",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "by",
  "can",
  "do",
  "does",
  "for",
  "from",
  "how",
  "i",
  "in",
  "is",
  "it",
  "me",
  "my",
  "of",
  "on",
  "or",
  "that",
  "the",
  "this",
  "to",
  "what",
  "when",
  "where",
  "which",
  "who",
  "why",
  "with",
  "you",
]);

/**
 * Lower-case words of a text, a plural's `s` dropped so "article" meets "articles";
 * `search_articles` and `searchArticles` are two words each.
 */
function words(text: string): Set<string> {
  const split = text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  return new Set(
    split
      .filter((w) => w.length > 0 && !STOP.has(w))
      .map((w) => (w.length > 3 && w.endsWith("s") && !w.endsWith("ss") ? w.slice(0, -1) : w)),
  );
}

/** The argument a question goes into: the first required string property, else the first string property. */
export function questionArgument(inputSchema: Readonly<Record<string, unknown>>): string | null {
  const props = inputSchema.properties;
  if (props === null || typeof props !== "object") return null;
  const isString = (name: string): boolean => {
    const p = (props as Record<string, unknown>)[name];
    if (p === null || typeof p !== "object") return false;
    const type = (p as { type?: unknown }).type;
    return type === "string" || (Array.isArray(type) && type.includes("string"));
  };
  const required = Array.isArray(inputSchema.required)
    ? inputSchema.required.filter((r): r is string => typeof r === "string")
    : [];
  return required.find(isString) ?? Object.keys(props).find(isString) ?? null;
}

/**
 * The offline choice of an MCP tool for a question: among the tools that take a string argument,
 * the one whose name and description share the most words with the question (ties: the first
 * listed), called with the question as that argument. Null when no tool takes a string.
 */
export function chooseMcpTool(question: string, tools: readonly McpToolInfo[]): McpToolChoice | null {
  const asked = words(question);
  let best: McpToolChoice | null = null;
  for (const t of tools) {
    const arg = questionArgument(t.inputSchema);
    if (arg === null) continue;
    const own = words(`${t.name} ${t.description}`);
    let shared = 0;
    for (const w of asked) if (own.has(w)) shared++;
    if (best === null || shared > best.shared) best = { tool: t.name, args: { [arg]: question }, shared };
  }
  return best;
}
