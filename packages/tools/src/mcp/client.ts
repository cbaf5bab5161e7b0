import { AgentmeshError } from "@agentmesh/contracts";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { clipText } from "../text.js";
import type { McpServerConfig } from "./config.js";
import { compileArgsCheck, type ArgsCheck } from "./schema.js";
import { mapCallResult, resultText, type McpCallResult } from "./result.js";
import type * as McpSdk from "./sdk.js";

/** One tool as an MCP server lists it. */
export interface McpToolInfo {
  readonly name: string;
  readonly description: string;
  /** The server's JSON Schema of the tool's arguments (an object schema). */
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** Limits of one call. */
export interface McpCallOptions {
  /** Default: the server's `timeoutMs`. */
  readonly timeoutMs?: number;
  /** Aborting it cancels the call on the server (MCP `notifications/cancelled`) and rejects with its reason. */
  readonly signal?: AbortSignal;
}

/**
 * A connection to one MCP server, opened on first use and opened again after the server went
 * away (a stdio server is spawned anew). Every failure is an `AgentmeshError`: `tool_unavailable`
 * (cannot connect), `tool_not_found`, `invalid_tool_input` (not retryable: arguments fail the
 * tool's schema, checked here before the call, or the server refuses the call: an error result or
 * a JSON-RPC invalid-params error, with the server's message), `timeout`, `tool_error` (the
 * connection broke mid-call or the request failed otherwise; retryable), or the caller's abort
 * reason (`cancelled` when it is not one).
 */
export interface McpClient {
  readonly server: string;
  readonly config: McpServerConfig;
  /** The server's tools, in its order; listed once per connection. */
  listTools(opts?: { readonly signal?: AbortSignal }): Promise<readonly McpToolInfo[]>;
  callTool(tool: string, args: Readonly<Record<string, unknown>>, opts?: McpCallOptions): Promise<McpCallResult>;
  /** Ends the connection; a stdio server gets its stdin closed, then SIGTERM, then SIGKILL. */
  close(): Promise<void>;
}

/** Options of an MCP client. */
export interface McpClientOptions {
  /** Limit of connecting and listing tools (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** A stdio server's stderr, as it comes; ignored when absent. */
  readonly onStderr?: (text: string) => void;
}

type Sdk = typeof McpSdk;
let sdkImport: Promise<Sdk> | null = null;
/** The MCP SDK, imported once, by the first connection of any client (see sdk.ts). */
const loadSdk = (): Promise<Sdk> => (sdkImport ??= import("./sdk.js"));

interface Connection {
  readonly sdk: Sdk;
  readonly client: Client;
  tools: Map<string, McpToolInfo> | null;
  closed: boolean;
  /** Aborted when the server is found gone while calls are in flight: they fail at once instead of at their timeout. */
  readonly lost: AbortController;
  probing: boolean;
}

// The SDK's request errors that mean the connection itself failed, not the tool.
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOENT",
  "EACCES",
]);

function causeCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

function isContentResult(answer: object): answer is CallToolResult {
  return Array.isArray((answer as Partial<CallToolResult>).content);
}

function aborted(signal: AbortSignal): AgentmeshError {
  const reason: unknown = signal.reason;
  return reason instanceof AgentmeshError
    ? reason
    : new AgentmeshError("cancelled", "the caller cancelled the MCP call");
}

/** `p`, or the abort of `signal` if that comes first. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(aborted(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(aborted(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

class McpClientImpl implements McpClient {
  readonly server: string;
  readonly config: McpServerConfig;
  readonly #opts: McpClientOptions;
  readonly #checks = new Map<string, ArgsCheck>();
  #connecting: Promise<Connection> | null = null;
  #closed = false;

  constructor(config: McpServerConfig, opts: McpClientOptions) {
    this.server = config.name;
    this.config = config;
    this.#opts = opts;
  }

  async listTools(opts: { readonly signal?: AbortSignal } = {}): Promise<readonly McpToolInfo[]> {
    const conn = await this.#connection(opts.signal);
    return [...(await this.#tools(conn, opts.signal)).values()];
  }

  async callTool(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    opts: McpCallOptions = {},
  ): Promise<McpCallResult> {
    const conn = await this.#connection(opts.signal);
    const info = (await this.#tools(conn, opts.signal)).get(tool);
    if (!info)
      throw new AgentmeshError("tool_not_found", `MCP server "${this.server}" has no tool "${clipText(tool, 80)}"`);
    this.#validate(info, args);
    const timeoutMs = opts.timeoutMs ?? this.config.timeoutMs;
    const signal = opts.signal ? AbortSignal.any([opts.signal, conn.lost.signal]) : conn.lost.signal;
    let answer;
    try {
      answer = await conn.client.callTool({ name: tool, arguments: { ...args } }, conn.sdk.CallToolResultSchema, {
        timeout: timeoutMs,
        signal,
      });
    } catch (err) {
      throw this.#failure(err, conn, opts.signal, `tool "${tool}"`, timeoutMs);
    }
    // the SDK's type also allows a pre-2025 `{ toolResult }` answer; the schema we pass parses only `content`
    const result: CallToolResult = isContentResult(answer) ? answer : { content: [] };
    // An error result is the tool's answer to these arguments (the SDK's servers also report
    // arguments that fail their schema this way): the same call would get it again.
    if (result.isError)
      throw new AgentmeshError(
        "invalid_tool_input",
        `MCP tool "${this.server}.${tool}" refused the call: ${resultText(result) || "no detail"}`,
      );
    return mapCallResult(result);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pending = this.#connecting;
    this.#connecting = null;
    const conn = await pending?.catch(() => null);
    if (conn) await conn.client.close();
  }

  /** The live connection, or a new one when there is none or the last one closed. */
  async #connection(signal: AbortSignal | undefined): Promise<Connection> {
    if (signal?.aborted) throw aborted(signal);
    if (this.#closed) throw new AgentmeshError("tool_unavailable", `MCP client of "${this.server}" is closed`);
    const current = this.#connecting;
    if (current) {
      const conn = await current.catch(() => null);
      if (conn && !conn.closed) return conn;
      if (this.#connecting === current) this.#connecting = null;
    }
    // the connection is shared: one caller's abort ends its own wait, not the connecting
    this.#connecting ??= this.#connect();
    return untilAborted(this.#connecting, signal);
  }

  async #connect(): Promise<Connection> {
    const sdk = await loadSdk();
    const client = new sdk.Client({ name: "agentmesh", version: "0.1.0" });
    const conn: Connection = { sdk, client, tools: null, closed: false, lost: new AbortController(), probing: false };
    client.onclose = () => {
      conn.closed = true;
    };
    if (this.config.transport === "http") client.onerror = () => this.#probe(conn);
    const timeout = this.#opts.connectTimeoutMs ?? 10_000;
    try {
      await client.connect(this.#transport(sdk), { timeout });
      return conn;
    } catch (err) {
      conn.closed = true;
      await client.close().catch(() => undefined);
      const why =
        err instanceof sdk.McpError && err.code === Number(sdk.ErrorCode.RequestTimeout)
          ? `no answer within ${timeout} ms`
          : (err as Error).message;
      throw new AgentmeshError(
        "tool_unavailable",
        `MCP server "${this.server}" cannot be reached: ${clipText(why, 300)}`,
        { cause: err },
      );
    }
  }

  #transport(sdk: Sdk): Transport {
    const c = this.config;
    if (c.transport === "http")
      return new sdk.StreamableHTTPClientTransport(new URL(c.url), {
        reconnectionOptions: {
          maxRetries: 0,
          initialReconnectionDelay: 1000,
          maxReconnectionDelay: 1000,
          reconnectionDelayGrowFactor: 1,
        },
      });
    // `env: {}`: the SDK adds only its short list of harmless variables (HOME, PATH, USER, ...), never our secrets
    const transport = new sdk.StdioClientTransport({
      command: c.command,
      args: [...c.args],
      cwd: c.cwd,
      env: {},
      stderr: this.#opts.onStderr ? "pipe" : "ignore",
    });
    const onStderr = this.#opts.onStderr;
    if (onStderr) transport.stderr?.on("data", (chunk: Buffer) => onStderr(chunk.toString("utf8")));
    return transport;
  }

  /**
   * An HTTP server that dies mid-call breaks the call's event stream, which the SDK reports only as
   * a transport error while the call waits for its timeout. A ping tells a broken stream (server
   * gone: the connection is dropped and its calls fail now) from one that merely ended.
   */
  #probe(conn: Connection): void {
    if (conn.closed || conn.probing) return;
    conn.probing = true;
    void conn.client
      .ping({ timeout: 2000 })
      .then(
        () => undefined,
        async (err: unknown) => {
          conn.closed = true;
          conn.lost.abort(
            new AgentmeshError(
              "tool_error",
              `MCP server "${this.server}": the connection was lost mid-call (${clipText((err as Error).message, 200)})`,
              { retryable: true, cause: err },
            ),
          );
          await conn.client.close();
        },
      )
      .catch(() => undefined)
      .finally(() => {
        conn.probing = false;
      });
  }

  async #tools(conn: Connection, signal: AbortSignal | undefined): Promise<Map<string, McpToolInfo>> {
    if (conn.tools) return conn.tools;
    const tools = new Map<string, McpToolInfo>();
    const timeout = this.#opts.connectTimeoutMs ?? 10_000;
    let cursor: string | undefined;
    try {
      // a bounded number of pages: a server that pages forever is not answered forever
      for (let page = 0; page < 20; page++) {
        const res = await conn.client.listTools(cursor === undefined ? {} : { cursor }, { timeout, signal });
        for (const t of res.tools)
          tools.set(t.name, { name: t.name, description: t.description ?? t.title ?? "", inputSchema: t.inputSchema });
        cursor = res.nextCursor;
        if (cursor === undefined) break;
      }
    } catch (err) {
      throw this.#failure(err, conn, signal, "tools/list", timeout);
    }
    conn.tools = tools;
    return tools;
  }

  #validate(info: McpToolInfo, args: Readonly<Record<string, unknown>>): void {
    let check = this.#checks.get(info.name);
    if (!check) {
      try {
        check = compileArgsCheck(info.inputSchema);
      } catch (err) {
        throw new AgentmeshError(
          "tool_error",
          `MCP tool "${this.server}.${info.name}" has an input schema that cannot be used: ${clipText((err as Error).message, 300)}`,
          { retryable: false },
        );
      }
      this.#checks.set(info.name, check);
    }
    const problem = check(args);
    if (problem !== null) throw new AgentmeshError("invalid_tool_input", `mcp.${this.server}.${info.name}: ${problem}`);
  }

  /** What a failed request means to our caller; a connection that failed is dropped, so the next call reconnects. */
  #failure(
    err: unknown,
    conn: Connection,
    signal: AbortSignal | undefined,
    what: string,
    timeoutMs: number,
  ): AgentmeshError {
    if (signal?.aborted) return aborted(signal);
    if (conn.lost.signal.aborted) return conn.lost.signal.reason as AgentmeshError;
    const at = `MCP server "${this.server}", ${what}`;
    const { McpError, ErrorCode: McpCode } = conn.sdk;
    if (err instanceof McpError) {
      switch (err.code) {
        case Number(McpCode.RequestTimeout):
          return new AgentmeshError("timeout", `${at}: no answer within ${timeoutMs} ms (cancelled)`, { cause: err });
        case Number(McpCode.ConnectionClosed):
          conn.closed = true;
          return new AgentmeshError("tool_error", `${at}: the connection closed mid-call (did the server exit?)`, {
            cause: err,
            retryable: true,
          });
        case Number(McpCode.InvalidParams):
          return new AgentmeshError("invalid_tool_input", `${at}: ${clipText(err.message, 500)}`, { cause: err });
        default:
          return new AgentmeshError("tool_error", `${at}: ${clipText(err.message, 500)}`, { cause: err });
      }
    }
    const code = causeCode(err);
    if (code !== undefined && UNREACHABLE.has(code)) {
      conn.closed = true;
      return new AgentmeshError("tool_unavailable", `${at}: the server cannot be reached (${code})`, { cause: err });
    }
    return new AgentmeshError("tool_error", `${at}: ${clipText((err as Error).message || String(err), 500)}`, {
      cause: err,
      retryable: true,
    });
  }
}

/** A client of one configured MCP server; nothing is spawned or opened before the first call. */
export function createMcpClient(config: McpServerConfig, opts: McpClientOptions = {}): McpClient {
  return new McpClientImpl(config, opts);
}
