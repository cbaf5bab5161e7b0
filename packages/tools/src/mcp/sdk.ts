// The parts of the MCP SDK the client uses, imported by `createMcpClient`'s first connection: every
// agent process imports this package, most never talk to an MCP server, and loading the SDK costs
// a few hundred ms of CPU.
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
export { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
export { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
export { CallToolResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
