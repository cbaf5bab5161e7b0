import { describe, expect, it } from "vitest";
import type { McpToolInfo } from "./client.js";
import { chooseMcpTool, questionArgument } from "./choose.js";

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
    inputSchema: obj({ limit: { type: "integer" }, query: { type: "string" } }, ["limit", "query"]),
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
      tool: "search_articles",
      args: { query: "Find articles about trastuzumab" },
      shared: 1,
    });
    expect(chooseMcpTool("search published article on HER2", tools)).toEqual({
      tool: "search_articles",
      args: { query: "search published article on HER2" },
      shared: 3,
    });
    expect(chooseMcpTool("which clinical trials recruit?", tools)?.tool).toBe("searchTrials");
  });

  it("splits camelCase and snake_case names into words", () => {
    expect(chooseMcpTool("trials", tools)).toEqual({ tool: "searchTrials", args: { phase: "trials" }, shared: 1 });
  });

  it("breaks ties by the order the server listed its tools, and falls back to the first when nothing is shared", () => {
    expect(chooseMcpTool("search", tools)?.tool).toBe("search_articles");
    expect(chooseMcpTool("the weather in Oslo", tools)?.tool).toBe("get_gene");
  });

  it("ignores common words and tools without a string argument; null when none has one", () => {
    expect(chooseMcpTool("a the of by", tools)?.shared).toBe(0);
    expect(chooseMcpTool("search articles trials genes everything", [tools[3] as McpToolInfo])).toBeNull();
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
