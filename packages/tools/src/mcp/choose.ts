import type { McpToolInfo } from "./client.js";

/** The tool the offline chooser picked, and the arguments to call it with. */
export interface McpToolChoice {
  readonly kind: "call";
  readonly tool: string;
  /** The question in the tool's text argument; any other required argument from its schema's `const` or `default`. */
  readonly args: Record<string, unknown>;
  /** Words the question shares with the tool's name and description. */
  readonly shared: number;
}

/** No listed tool can be called with what the question gives; `why` names what each one lacks. */
export interface McpNoToolChoice {
  readonly kind: "none";
  readonly why: string;
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

/** The schema of one property, or null when the schema has none of that name. */
function propertyOf(inputSchema: Readonly<Record<string, unknown>>, name: string): Record<string, unknown> | null {
  const props = inputSchema.properties;
  if (props === null || typeof props !== "object") return null;
  const p = (props as Record<string, unknown>)[name];
  return p !== null && typeof p === "object" ? (p as Record<string, unknown>) : null;
}

/** A value the schema itself fixes for a property (`const`, `default`, a one-value `enum`), else undefined. */
function fixedValue(p: Record<string, unknown> | null): unknown {
  if (p === null) return undefined;
  if ("const" in p) return p.const;
  if (p.default !== undefined) return p.default;
  return Array.isArray(p.enum) && p.enum.length === 1 ? (p.enum[0] as unknown) : undefined;
}

/**
 * The arguments a question alone gives a tool: the question in its text argument
 * (`questionArgument`), every other required argument from a value its schema fixes. When a
 * required argument is left over, the names of those it cannot fill; when the tool takes no text
 * at all, `missing` is empty and `text` false.
 */
export function questionArguments(
  question: string,
  inputSchema: Readonly<Record<string, unknown>>,
): { readonly args: Record<string, unknown> } | { readonly missing: readonly string[]; readonly text: boolean } {
  const arg = questionArgument(inputSchema);
  if (arg === null) return { missing: [], text: false };
  const args: Record<string, unknown> = { [arg]: question };
  const missing: string[] = [];
  const required = Array.isArray(inputSchema.required) ? inputSchema.required : [];
  for (const name of required) {
    if (typeof name !== "string" || name === arg) continue;
    const value = fixedValue(propertyOf(inputSchema, name));
    if (value === undefined) missing.push(name);
    else args[name] = value;
  }
  return missing.length > 0 ? { missing, text: true } : { args };
}

/** Tools named in a "none fits" reason at most; the rest are counted. */
const MAX_REASONS = 5;

/**
 * The offline choice of an MCP tool for a question: among the tools the question alone can fill
 * (`questionArguments`), the one whose name and description share the most words with the
 * question (ties: the first listed). A tool with a required argument the question cannot give
 * (a second text, a number) is never chosen; when no tool is left, the answer says what each lacks.
 */
export function chooseMcpTool(question: string, tools: readonly McpToolInfo[]): McpToolChoice | McpNoToolChoice {
  const asked = words(question);
  let best: McpToolChoice | null = null;
  const reasons: string[] = [];
  for (const t of tools) {
    const fill = questionArguments(question, t.inputSchema);
    if (!("args" in fill)) {
      reasons.push(
        fill.text
          ? `${t.name} also needs ${fill.missing.map((m) => `"${m}"`).join(", ")}`
          : `${t.name} takes no text argument`,
      );
      continue;
    }
    const own = words(`${t.name} ${t.description}`);
    let shared = 0;
    for (const w of asked) if (own.has(w)) shared++;
    if (best === null || shared > best.shared) best = { kind: "call", tool: t.name, args: fill.args, shared };
  }
  if (best) return best;
  const more = reasons.length > MAX_REASONS ? `, and ${reasons.length - MAX_REASONS} more` : "";
  return {
    kind: "none",
    why:
      tools.length === 0
        ? "the server lists no tool"
        : `no tool can be called with the question alone (${reasons.slice(0, MAX_REASONS).join("; ")}${more})`,
  };
}
