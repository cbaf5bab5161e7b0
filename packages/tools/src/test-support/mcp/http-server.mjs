// A test MCP server over streamable HTTP on 127.0.0.1 and a free port: `node http-server.mjs`
// prints `{"port":N}` once it listens; the endpoint is `http://127.0.0.1:N/mcp`.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { buildTestServer } from "./tools.mjs";

// one server object per MCP session, so a cancellation reaches the call it names
const sessions = new Map();

const http = createServer((req, res) => {
  void (async () => {
    if (!req.url?.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = typeof sid === "string" ? sessions.get(sid) : undefined;
    if (!transport) {
      if (typeof sid === "string") {
        res.writeHead(404).end();
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => sessions.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await buildTestServer("test-http").connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res);
  })().catch((err) => {
    if (!res.headersSent) res.writeHead(500).end(String(err));
  });
});
http.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: http.address().port })}\n`);
});
