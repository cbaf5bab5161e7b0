import { z } from "zod";
import { AgentmeshError, formatZodError } from "@agentmesh/contracts";

/** One environment variable: its schema (with default), what it does, and which services read it. */
export interface EnvVar {
  readonly name: string;
  readonly schema: z.ZodType;
  /** Default as shown in the README ("—" for none). */
  readonly default: string;
  readonly description: string;
  readonly usedBy: readonly ("all" | "coordinator" | "agents" | "cli")[];
}

const int = (min: number) => z.coerce.number().int().min(min);
const flag = z.enum(["0", "1", "true", "false"]).transform((v) => v === "1" || v === "true");

/**
 * Every environment variable agentmesh reads. The README's configuration table is checked
 * against this list by a test, so the two cannot drift.
 */
export const ENV_VARS = [
  { name: "NATS_URL", schema: z.string().url().default("nats://127.0.0.1:4222"), default: "nats://127.0.0.1:4222", description: "NATS server (JetStream on); credentials in the URL are used", usedBy: ["all"] },
  { name: "NATS_NKEY_SEED_FILE", schema: z.string().min(1).optional(), default: "— (no NKey)", description: "file holding this service's NATS NKey user seed (`pnpm nats:keys`; mount it as a secret); required by a server with the generated config", usedBy: ["all"] },
  { name: "NATS_TLS_CA", schema: z.string().min(1).optional(), default: "—", description: "CA file to trust for a NATS server with TLS (`tls://` URLs)", usedBy: ["all"] },
  { name: "NATS_TLS_CERT", schema: z.string().min(1).optional(), default: "—", description: "client certificate file when the NATS server verifies clients (with `NATS_TLS_KEY`)", usedBy: ["all"] },
  { name: "NATS_TLS_KEY", schema: z.string().min(1).optional(), default: "—", description: "client key file of `NATS_TLS_CERT`", usedBy: ["all"] },
  { name: "REDIS_URL", schema: z.string().url().default("redis://127.0.0.1:6379"), default: "redis://127.0.0.1:6379", description: "Redis holding session state", usedBy: ["coordinator", "cli"] },
  { name: "AGENTMESH_PREFIX", schema: z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/).default("agentmesh"), default: "agentmesh", description: "prefix of every subject, stream and Redis key", usedBy: ["all"] },
  { name: "LOG_LEVEL", schema: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), default: "info", description: "pino log level", usedBy: ["all"] },
  { name: "AGENTMESH_LOG_PAYLOADS", schema: flag.default(false), default: "0", description: "log prompts and task payloads (off: they may hold user data)", usedBy: ["agents"] },
  { name: "AGENTMESH_CRASH_AT", schema: z.string().max(40).optional(), default: "—", description: "fault injection: exit at this named crash point (tests only)", usedBy: ["coordinator", "agents"] },
  { name: "AGENTMESH_LLM_BASE_URL", schema: z.string().url().optional(), default: "— (offline engine)", description: "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama", usedBy: ["agents"] },
  { name: "AGENTMESH_LLM_API_KEY", schema: z.string().optional(), default: "—", description: "API key for the endpoint (redacted in logs)", usedBy: ["agents"] },
  { name: "AGENTMESH_LLM_MODEL", schema: z.string().min(1).default("gpt-4o-mini"), default: "gpt-4o-mini", description: "default model for every role", usedBy: ["agents"] },
  { name: "AGENTMESH_ROLE_MODELS", schema: z.string().default(""), default: "—", description: "per-role overrides: `role=model@temperature/tier,…` e.g. `critic=llama3.1@0/fast,expert=qwen2.5:32b@0.2/strong`", usedBy: ["agents"] },
  { name: "AGENTMESH_LLM_PRICES", schema: z.string().default(""), default: "—", description: "cost table: `model=input/output` USD per million tokens, comma-separated", usedBy: ["agents"] },
  { name: "AGENTMESH_LLM_TIMEOUT_MS", schema: int(1000).default(60_000), default: "60000", description: "one model HTTP request's timeout", usedBy: ["agents"] },
  { name: "AGENTMESH_LLM_MAX_ATTEMPTS", schema: int(1).default(3), default: "3", description: "HTTP attempts per model call on 429/5xx (ours; the client's retries are off)", usedBy: ["agents"] },
  { name: "AGENTMESH_AGENT_CONCURRENCY", schema: int(1).default(4), default: "4", description: "tasks one agent process works at once (pull batch size)", usedBy: ["agents"] },
  { name: "AGENTMESH_ROLES", schema: z.string().default(""), default: "— (all)", description: "local runner: comma-separated roles to run in this process", usedBy: ["agents"] },
  { name: "AGENTMESH_PROMPTS_DIR", schema: z.string().min(1).optional(), default: "— (each role's own folder)", description: "folder of prompt-file overrides (`<role>.<op>.v<N>.json`); each replaces the built-in contract of the same role.op", usedBy: ["agents"] },
  { name: "AGENTMESH_CORPUS_DIR", schema: z.string().min(1).default("corpus"), default: "corpus", description: "folder of documents `corpus_search` ranks (retriever, executor); missing folder = no corpus_search", usedBy: ["agents"] },
  { name: "AGENTMESH_FILE_ROOTS", schema: z.string().default(""), default: "— (no file_read)", description: "executor: comma-separated folders `file_read` may read", usedBy: ["agents"] },
  { name: "AGENTMESH_WEB_SEARCH_URL", schema: z.string().url().default("https://api.search.brave.com"), default: "https://api.search.brave.com", description: "base URL of a Brave-Search-compatible web search API (retriever, executor)", usedBy: ["agents"] },
  { name: "AGENTMESH_WEB_SEARCH_KEY", schema: z.string().optional(), default: "— (no web search)", description: "API key of the web search API; unset = web search answers `tool_unavailable` and the retriever skips the web", usedBy: ["agents"] },
  { name: "AGENTMESH_RPC", schema: flag.default(false), default: "0", description: "debugging: also serve each op on `<p>.rpc.<role>.<op>` (direct calls with any session id; off in production)", usedBy: ["agents"] },
  { name: "AGENTMESH_TEST_TOOLS", schema: flag.default(false), default: "0", description: "executor: also register the test-only tools `test_flaky` and `test_slow` (tests only)", usedBy: ["agents"] },
  { name: "AGENTMESH_TASK_ACK_WAIT_MS", schema: int(1000).default(30_000), default: "30000", description: "task lease; agents heartbeat every third of it", usedBy: ["coordinator", "agents"] },
  { name: "AGENTMESH_INBOX_ACK_WAIT_MS", schema: int(1000).default(30_000), default: "30000", description: "inbox lease; a coordinator that dies mid-step has its message redelivered after this", usedBy: ["coordinator"] },
  { name: "AGENTMESH_TASK_MAX_DELIVER", schema: int(1).default(5), default: "5", description: "deliveries of one task before a typed failure", usedBy: ["coordinator", "agents"] },
  { name: "AGENTMESH_TASK_DEADLINE_MS", schema: int(1000).default(300_000), default: "300000", description: "deadline of each awaited task", usedBy: ["coordinator"] },
  { name: "AGENTMESH_SESSION_DEADLINE_MS", schema: int(1000).default(1_800_000), default: "1800000", description: "wall-clock deadline of a session", usedBy: ["coordinator"] },
  { name: "AGENTMESH_MAX_STEPS", schema: int(1).default(100), default: "100", description: "default step budget per session", usedBy: ["coordinator"] },
  { name: "AGENTMESH_MAX_TOKENS", schema: int(1).optional(), default: "— (unlimited)", description: "default token budget per session", usedBy: ["coordinator"] },
  { name: "AGENTMESH_MAX_COST_USD", schema: z.coerce.number().positive().optional(), default: "— (unlimited)", description: "default cost budget per session (USD)", usedBy: ["coordinator"] },
  { name: "AGENTMESH_MAX_WALL_MS", schema: int(1000).optional(), default: "— (unlimited)", description: "default wall-clock budget per session (ends it as budget_exceeded)", usedBy: ["coordinator"] },
  { name: "AGENTMESH_COORDINATOR_CONCURRENCY", schema: int(1).default(16), default: "16", description: "inbox messages one coordinator steps at once", usedBy: ["coordinator"] },
  { name: "AGENTMESH_SESSION_TTL_MS", schema: int(1000).default(7 * 24 * 3600 * 1000), default: "604800000", description: "sliding TTL of a live session's keys", usedBy: ["coordinator"] },
  { name: "AGENTMESH_FINISHED_TTL_MS", schema: int(1000).default(24 * 3600 * 1000), default: "86400000", description: "TTL of a finished session's keys", usedBy: ["coordinator"] },
  { name: "AGENTMESH_REQUIRE_DURABLE", schema: flag.default(false), default: "0", description: "refuse to start unless Redis has AOF, appendfsync always and no eviction", usedBy: ["coordinator"] },
] as const satisfies readonly EnvVar[];

export type EnvName = (typeof ENV_VARS)[number]["name"];
type VarOf<N extends EnvName> = Extract<(typeof ENV_VARS)[number], { name: N }>;
export type EnvValues<N extends EnvName> = { readonly [K in N]: z.infer<VarOf<K>["schema"]> };

/** The error for bad configuration: every problem listed at once, code `invalid_config`. */
export function configError(problems: readonly string[]): AgentmeshError {
  return new AgentmeshError("invalid_config", `invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}

/** Parses the named variables from `env`, listing every problem at once; the result is frozen. */
export function parseEnv<N extends EnvName>(names: readonly N[], env: Record<string, string | undefined>): EnvValues<N> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of names) {
    const spec = ENV_VARS.find((v) => v.name === name);
    if (!spec) throw new Error(`unknown env var ${name}`);
    const raw = env[name];
    const r = (spec.schema as z.ZodType).safeParse(raw === "" ? undefined : raw);
    if (r.success) out[name] = r.data;
    else problems.push(`${name}=${JSON.stringify(raw)}: ${formatZodError(r.error)}`);
  }
  if (problems.length) throw configError(problems);
  return Object.freeze(out) as EnvValues<N>;
}

/** The NATS access variables every service reads. */
export const NATS_ACCESS_VARS = ["NATS_NKEY_SEED_FILE", "NATS_TLS_CA", "NATS_TLS_CERT", "NATS_TLS_KEY"] as const;

/** How a service authenticates to NATS and checks its TLS, in the shape `connectNats` takes. */
export interface NatsAccess {
  readonly nkeySeedFile?: string;
  readonly tls?: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };
}

/** Builds NatsAccess from parsed NATS_ACCESS_VARS. */
export function natsAccess(e: EnvValues<(typeof NATS_ACCESS_VARS)[number]>): NatsAccess {
  const tls = e.NATS_TLS_CA || e.NATS_TLS_CERT || e.NATS_TLS_KEY
    ? { ...(e.NATS_TLS_CA ? { caFile: e.NATS_TLS_CA } : {}), ...(e.NATS_TLS_CERT ? { certFile: e.NATS_TLS_CERT } : {}), ...(e.NATS_TLS_KEY ? { keyFile: e.NATS_TLS_KEY } : {}) }
    : undefined;
  return Object.freeze({ ...(e.NATS_NKEY_SEED_FILE ? { nkeySeedFile: e.NATS_NKEY_SEED_FILE } : {}), ...(tls ? { tls } : {}) });
}
