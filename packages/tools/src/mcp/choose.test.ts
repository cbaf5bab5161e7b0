import { describe, expect, it } from "vitest";
import type { McpToolInfo } from "./client.js";
import { chooseMcpTool, questionArgument, questionArguments } from "./choose.js";

const obj = (properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> => ({
  type: "object",
  properties,
  required,
});

const tools: McpToolInfo[] = [
  {
    name: "get_gene",
    description: "Look up a gene by its symbol",
    inputSchema: obj({ symbol: { type: "string" } }, ["symbol"]),
  },
  {
    name: "search_articles",
    description: "Search published articles about a topic",
    inputSchema: obj({ limit: { type: "integer", default: 5 }, query: { type: "string" } }, ["limit", "query"]),
  },
  {
    name: "searchTrials",
    description: "Search clinical trials",
    inputSchema: obj({ term: { type: "string" }, phase: { type: "string" } }, ["phase"]),
  },
  { name: "ping", description: "Search articles trials genes everything", inputSchema: obj({ n: { type: "number" } }) },
];

describe("chooseMcpTool", () => {
  it("picks the tool sharing the most words, with the question as its first required string argument", () => {
    expect(chooseMcpTool("Find articles about trastuzumab", tools)).toEqual({
      kind: "call",
      tool: "search_articles",
      args: { query: "Find articles about trastuzumab", limit: 5 },
      shared: 1,
    });
    expect(chooseMcpTool("search published article on HER2", tools)).toEqual({
      kind: "call",
      tool: "search_articles",
      args: { query: "search published article on HER2", limit: 5 },
      shared: 3,
    });
    expect(chooseMcpTool("which clinical trials recruit?", tools)).toMatchObject({ tool: "searchTrials" });
  });

  it("splits camelCase and snake_case names into words", () => {
    expect(chooseMcpTool("trials", tools)).toEqual({
      kind: "call",
      tool: "searchTrials",
      args: { phase: "trials" },
      shared: 1,
    });
  });

  it("breaks ties by the order the server listed its tools, and falls back to the first when nothing is shared", () => {
    expect(chooseMcpTool("search", tools)).toMatchObject({ tool: "search_articles" });
    expect(chooseMcpTool("the weather in Oslo", tools)).toMatchObject({ tool: "get_gene" });
  });

  it("ignores common words and tools without a string argument; says so when none has one", () => {
    const none = chooseMcpTool("a the of by", tools);
    expect(none.kind === "call" && none.shared).toBe(0);
    expect(chooseMcpTool("search articles trials genes everything", [tools[3] as McpToolInfo])).toEqual({
      kind: "none",
      why: "no tool can be called with the question alone (ping takes no text argument)",
    });
  });

  it("never chooses a tool with a required argument the question cannot fill, however well its words match", () => {
    // the filesystem server's search: two required strings, the question can be only one of them
    const searchFiles: McpToolInfo = {
      name: "search_files",
      description: "Search files matching a pattern",
      inputSchema: obj({ path: { type: "string" }, pattern: { type: "string" } }, ["path", "pattern"]),
    };
    const sum: McpToolInfo = {
      name: "get-sum",
      description: "Returns the sum of two numbers",
      inputSchema: obj({ a: { type: "number" }, b: { type: "number" } }, ["a", "b"]),
    };
    // it shares three words with the question, search_articles one: search_articles is called
    expect(chooseMcpTool("Search files matching HER2", [searchFiles, ...tools])).toMatchObject({
      kind: "call",
      tool: "search_articles",
    });
    expect(chooseMcpTool("Search files matching HER2", [searchFiles, sum])).toEqual({
      kind: "none",
      why: 'no tool can be called with the question alone (search_files also needs "pattern"; get-sum takes no text argument)',
    });
    expect(chooseMcpTool("anything", [])).toEqual({ kind: "none", why: "the server lists no tool" });
  });
});

describe("questionArguments", () => {
  it("fills a required argument other than the question only from a value its schema fixes", () => {
    const schema = obj(
      { q: { type: "string" }, mode: { const: "fast" }, n: { type: "integer", default: 3 }, lang: { enum: ["en"] } },
      ["q", "mode", "n", "lang"],
    );
    expect(questionArguments("HER2?", schema)).toEqual({ args: { q: "HER2?", mode: "fast", n: 3, lang: "en" } });
    expect(
      questionArguments("HER2?", obj({ q: { type: "string" }, n: { type: "integer" } }, ["q", "n", "gone"])),
    ).toEqual({ missing: ["n", "gone"], text: true });
    expect(questionArguments("HER2?", obj({ n: { type: "integer" } }))).toEqual({ missing: [], text: false });
  });
});

describe("questionArgument", () => {
  it("prefers the first required string, then the first string, else none", () => {
    expect(
      questionArgument(
        obj({ a: { type: "integer" }, b: { type: "string" }, c: { type: ["string", "null"] } }, ["a", "c"]),
      ),
    ).toBe("c");
    expect(questionArgument(obj({ a: { type: "integer" }, b: { type: "string" } }))).toBe("b");
    expect(questionArgument(obj({ a: { type: "integer" } }))).toBeNull();
    expect(questionArgument({ type: "object" })).toBeNull();
  });
});
