// A test MCP server over stdio: `node stdio-server.mjs`.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { buildTestServer } from "./tools.mjs";

await buildTestServer("test-stdio").connect(new StdioServerTransport());
