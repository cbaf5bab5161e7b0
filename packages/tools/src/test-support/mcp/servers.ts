// Starting the test MCP servers from a test: the stdio one is spawned by the client itself (its
// config), the HTTP one runs in its own process so that a test can crash it.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import type { McpServerConfig } from "../../mcp/config.js";

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

/** The config of the stdio test server, with everyone allowed to call everything unless told otherwise. */
export function stdioTestServer(
  name = "stdio_test",
  overrides: Partial<Pick<McpServerConfig, "timeoutMs" | "allow">> = {},
): McpServerConfig {
  return {
    name,
    transport: "stdio",
    command: process.execPath,
    args: [here("./stdio-server.mjs")],
    timeoutMs: 5000,
    allow: { researcher: "*" },
    ...overrides,
  };
}

/** The HTTP test server, running; `kill` ends its process at once (SIGKILL). */
export interface HttpTestServer {
  readonly url: string;
  readonly process: ChildProcess;
  config(name?: string, overrides?: Partial<Pick<McpServerConfig, "timeoutMs" | "allow">>): McpServerConfig;
  kill(): Promise<void>;
}

/** Starts the HTTP test server on 127.0.0.1 and a free port, with an empty env. */
export async function startHttpTestServer(): Promise<HttpTestServer> {
  const child = spawn(process.execPath, [here("./http-server.mjs")], { env: {}, stdio: ["ignore", "pipe", "inherit"] });
  const [chunk] = (await Promise.race([
    once(child.stdout, "data"),
    once(child, "exit").then(() => {
      throw new Error("the HTTP test MCP server exited before listening");
    }),
  ])) as [Buffer];
  const { port } = JSON.parse(chunk.toString("utf8")) as { port: number };
  const url = `http://127.0.0.1:${port}/mcp`;
  return {
    url,
    process: child,
    config: (name = "http_test", overrides = {}) => ({
      name,
      transport: "http",
      url,
      timeoutMs: 5000,
      allow: { researcher: "*" },
      ...overrides,
    }),
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
    },
  };
}
