// The tools of the test MCP servers (stdio and HTTP share them): an article search that answers
// with text, links and an embedded resource, a slow tool that notices cancellation, a failing
// tool, a tool that kills its own process, and probes of the process (pid, env, cancellations).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

let cancellations = 0;

const text = (t) => ({ content: [{ type: "text", text: t }] });

/** A new server object with the test tools; `name` is what it reports at initialization. */
export function buildTestServer(name) {
  const server = new McpServer({ name, version: "1.0.0" });
  server.registerTool(
    "search_articles",
    {
      description: "Search published articles about a topic and return matching articles with links",
      inputSchema: { query: z.string().min(1), limit: z.number().int().min(1).max(10).optional() },
    },
    async ({ query }) => ({
      content: [
        { type: "text", text: `Two articles match "${query}".` },
        {
          type: "resource_link",
          uri: "https://articles.example/a/1",
          name: "article-1",
          title: "Trastuzumab in HER2+ disease",
          description: "A review of trastuzumab regimens.",
        },
        {
          type: "resource_link",
          uri: "file:///data/articles/2.txt",
          name: "2.txt",
          description: "Local notes on pertuzumab.",
        },
        {
          type: "resource",
          resource: {
            uri: "https://articles.example/a/3",
            mimeType: "text/plain",
            text: "Embedded abstract about neoadjuvant therapy.",
          },
        },
        { type: "resource_link", uri: "https://articles.example/a/1", name: "article-1 again" },
      ],
    }),
  );
  server.registerTool(
    "slow",
    { description: "Wait a number of milliseconds, then answer", inputSchema: { ms: z.number().int().min(0) } },
    ({ ms }, extra) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve(text(`waited ${ms} ms`)), ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          cancellations++;
          resolve(text("cancelled"));
        });
      }),
  );
  server.registerTool("fail", { description: "Always fails", inputSchema: {} }, async () => ({
    isError: true,
    content: [{ type: "text", text: "the article index is down" }],
  }));
  server.registerTool("crash", { description: "Exits the server process at once", inputSchema: {} }, async () =>
    process.exit(3),
  );
  server.registerTool(
    "cancellations",
    { description: "How many calls were cancelled so far", inputSchema: {} },
    async () => text(String(cancellations)),
  );
  server.registerTool("pid", { description: "The server process id", inputSchema: {} }, async () =>
    text(String(process.pid)),
  );
  server.registerTool(
    "env_keys",
    { description: "Names of the server process environment variables", inputSchema: {} },
    async () => text(Object.keys(process.env).sort().join(",")),
  );
  return server;
}
