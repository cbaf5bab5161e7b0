import { AgentmeshError, RoleName } from "@agentmesh/contracts";
import { z } from "zod";

/** A server name: it becomes the middle of `mcp.<server>.<tool>`, so it stays short and plain. */
export const McpServerName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,23}$/, "must be lower-case letters, digits or _ (at most 24, a letter first)");

/** Which of a server's tools a role may call: all of them (`"*"`) or those named. */
const ToolAllowList = z.union([z.literal("*"), z.array(z.string().min(1).max(128)).max(200)]);

const ServerEntry = z
  .strictObject({
    /** stdio: the executable, looked up on PATH; spawned without a shell and with a minimal env. */
    command: z.string().min(1).max(1000).optional(),
    args: z.array(z.string().max(4000)).max(100).optional(),
    cwd: z.string().min(1).max(1000).optional(),
    /** streamable HTTP: the endpoint, e.g. `http://127.0.0.1:8765/mcp`. */
    url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    /** Per-call limit of the server's tools (default 10 s). */
    timeoutMs: z.number().int().min(100).max(300_000).default(10_000),
    /** Role → tools it may call; a role not named may call none (least privilege). */
    allow: z.partialRecord(RoleName, ToolAllowList).default({}),
  })
  // `when`: judged even when another field failed, so every problem is listed at once
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    message: 'needs either "command" (stdio) or "url" (streamable HTTP), exactly one',
    when: () => true,
  })
  .refine((s) => s.url === undefined || (s.args === undefined && s.cwd === undefined), {
    message: '"args" and "cwd" are for a stdio server ("command") only',
    when: () => true,
  });

/** What `AGENTMESH_MCP_SERVERS` holds: a JSON object of server name → server. */
export const McpServersConfig = z.record(McpServerName, ServerEntry);

/** One configured MCP server, as the client and the registry use it. */
export type McpServerConfig = {
  readonly name: string;
  readonly timeoutMs: number;
  readonly allow: Partial<Record<RoleName, "*" | readonly string[]>>;
} & (
  | { readonly transport: "stdio"; readonly command: string; readonly args: readonly string[]; readonly cwd?: string }
  | { readonly transport: "http"; readonly url: string }
);

/**
 * Parses the MCP servers setting (a JSON object; absent or blank = no servers), e.g.
 * `{"biomcp":{"command":"biomcp","args":["run"],"allow":{"researcher":"*"}},
 *   "llama":{"url":"http://127.0.0.1:8765/mcp","timeoutMs":20000,"allow":{"researcher":["search"]}}}`.
 * Throws one `invalid_config` error that lists every problem, each under `setting.<server>.<field>`.
 */
export function parseMcpServers(text: string | undefined, setting = "AGENTMESH_MCP_SERVERS"): McpServerConfig[] {
  if (text === undefined || text.trim() === "") return [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw invalidConfig([`${setting}: not valid JSON (${(err as Error).message})`]);
  }
  const problems: string[] = [];
  // names first, by hand: zod reports a bad record key without saying what is wrong with it
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw)) {
    for (const name of Object.keys(raw)) {
      const ok = McpServerName.safeParse(name);
      if (!ok.success) problems.push(`${setting}.${name}: server name ${ok.error.issues[0]?.message ?? "is invalid"}`);
    }
  }
  const parsed = McpServersConfig.safeParse(raw);
  if (!parsed.success) {
    for (const i of parsed.error.issues)
      if (i.code !== "invalid_key") problems.push(`${[setting, ...i.path.map(String)].join(".")}: ${i.message}`);
  }
  if (problems.length > 0 || !parsed.success) throw invalidConfig(problems);
  return Object.entries(parsed.data).map(([name, s]) =>
    s.command === undefined
      ? { name, transport: "http", url: s.url ?? "", timeoutMs: s.timeoutMs, allow: s.allow }
      : {
          name,
          transport: "stdio",
          command: s.command,
          args: s.args ?? [],
          ...(s.cwd === undefined ? {} : { cwd: s.cwd }),
          timeoutMs: s.timeoutMs,
          allow: s.allow,
        },
  );
}

function invalidConfig(problems: readonly string[]): AgentmeshError {
  return new AgentmeshError("invalid_config", `invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}
