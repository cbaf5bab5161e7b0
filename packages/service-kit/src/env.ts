import { z } from "zod";
import {
  AgentmeshError,
  BLACKBOARD_LIMITS,
  LIMITS,
  REDACTED,
  formatZodError,
  secretsOfUrl,
  setCompiledParsing,
} from "@agentmesh/contracts";
import type { TraceExportTarget, TracingConfig } from "./tracing.js";

/** One environment variable: its schema (with default), what it does, and which services read it. */
export interface EnvVar {
  readonly name: string;
  readonly schema: z.ZodType;
  /** Default as shown in docs/configuration.md ("—" for none). */
  readonly default: string;
  readonly description: string;
  readonly usedBy: readonly ("all" | "coordinator" | "agents" | "cli" | "gateway")[];
  /**
   * What of its value is secret: `value` the whole of it (an API key), `url` the credentials in
   * it (`user:pass@`). Secret values are never echoed in errors and are redacted from logs.
   */
  readonly secret?: "value" | "url";
}

const int = (min: number) => z.coerce.number().int().min(min);
const flag = z.enum(["0", "1", "true", "false"]).transform((v) => v === "1" || v === "true");

/** The schemes a NATS server address may have (`host:port` alone means `nats://`). */
/** A comma-separated list, trimmed, empty entries dropped. */
const csv = (check: (entry: string) => string | null) =>
  z.string().transform((raw, ctx) => {
    const entries = raw
      .split(",")
      .map((x) => x.trim())
      .filter((x) => x !== "");
    for (const e of entries) {
      const problem = check(e);
      if (problem) ctx.addIssue({ code: "custom", message: `"${e}": ${problem}` });
    }
    return entries;
  });
/** Web origins: scheme, host and optional port, nothing after. */
const originList = csv((e) =>
  /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:]+\](:\d{1,5})?$/.test(e)
    ? null
    : "an origin is scheme://host[:port], with no path",
);
/** Host names (as a Host header carries them, without the port). */
const hostList = csv((e) =>
  /^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:]+\]$/.test(e) ? null : "a host name, without scheme or port",
);
const NATS_SCHEMES = new Set(["nats:", "tls:", "ws:", "wss:"]);

/** Why one comma-separated entry of NATS_URL is no server address; null when it is one. Never echoes the entry (it may hold a password). */
function natsServerProblem(entry: string, at: number): string | null {
  let u: URL;
  try {
    u = new URL(entry.includes("://") ? entry : `nats://${entry}`);
  } catch {
    return `server ${at} is not a URL`;
  }
  if (!NATS_SCHEMES.has(u.protocol)) return `server ${at} has scheme ${u.protocol} (nats:, tls:, ws: or wss: expected)`;
  if (u.hostname === "") return `server ${at} names no host`;
  return null;
}

/**
 * NATS_URL: one server or several, comma-separated as the NATS clients take them
 * (`nats://a:4222,nats://b:4222`); the client connects to one and moves to another when it fails.
 */
const natsServers = z
  .string()
  .default("nats://127.0.0.1:4222")
  .superRefine((raw, ctx) => {
    const entries = raw.split(",").map((e) => e.trim());
    if (entries.every((e) => e === "")) ctx.addIssue({ code: "custom", message: "names no server" });
    for (const [i, e] of entries.entries()) {
      if (e === "") {
        if (entries.length > 1) ctx.addIssue({ code: "custom", message: `server ${i + 1} is empty` });
        continue;
      }
      const problem = natsServerProblem(e, i + 1);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }
  });

/**
 * Every environment variable agentmesh reads. The configuration table of docs/configuration.md is checked
 * against this list by a test, so the two cannot drift.
 */
export const ENV_VARS = [
  {
    name: "NATS_URL",
    schema: natsServers,
    default: "nats://127.0.0.1:4222",
    description:
      "NATS server (JetStream on), or a cluster's servers comma-separated (`nats://a:4222,nats://b:4222`: the client moves to another when one fails); credentials in the URL are used",
    usedBy: ["all"],
    secret: "url",
  },
  {
    name: "NATS_NKEY_SEED_FILE",
    schema: z.string().min(1).optional(),
    default: "— (no NKey)",
    description:
      "file holding this service's NATS NKey user seed (`pnpm nats:keys`; mount it as a secret); required by a server with the generated config",
    usedBy: ["all"],
  },
  {
    name: "NATS_TLS_CA",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "CA file to trust for a NATS server with TLS (`tls://` URLs)",
    usedBy: ["all"],
  },
  {
    name: "NATS_TLS_CERT",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "client certificate file when the NATS server verifies clients (with `NATS_TLS_KEY`)",
    usedBy: ["all"],
  },
  {
    name: "NATS_TLS_KEY",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "client key file of `NATS_TLS_CERT`",
    usedBy: ["all"],
  },
  {
    name: "REDIS_URL",
    schema: z.string().url().default("redis://127.0.0.1:6379"),
    default: "redis://127.0.0.1:6379",
    description:
      "Redis holding session state; `redis://user:pass@host:port` logs in as that ACL user (deploy/redis/README.md), `rediss://` uses TLS",
    usedBy: ["coordinator", "cli", "gateway"],
    secret: "url",
  },
  {
    name: "REDIS_TLS_CA",
    schema: z.string().min(1).optional(),
    default: "— (system CAs)",
    description: "file with the CA certificate(s) that sign the Redis server's TLS certificate (`rediss://` URLs)",
    usedBy: ["coordinator", "cli", "gateway"],
  },
  {
    name: "REDIS_SENTINELS",
    schema: z
      .string()
      .transform((v) =>
        v
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean),
      )
      .pipe(
        z
          .array(
            z
              .string()
              .regex(/^[^\s:,]+:\d{1,5}$/, "each sentinel is host:port")
              .transform((x) => {
                const i = x.lastIndexOf(":");
                return { host: x.slice(0, i), port: Number(x.slice(i + 1)) };
              })
              .pipe(z.object({ host: z.string(), port: z.number().int().min(1).max(65535) })),
          )
          .min(1, "name at least one sentinel"),
      )
      .optional(),
    default: "— (REDIS_URL is the server)",
    description:
      "Redis Sentinel: comma-separated `host:port` of the sentinels, which name the primary (docs/redis-failover.md); REDIS_URL then gives only the user, password and scheme",
    usedBy: ["coordinator", "cli", "gateway"],
  },
  {
    name: "REDIS_SENTINEL_MASTER",
    schema: z.string().min(1).default("agentmesh"),
    default: "agentmesh",
    description: "the primary's name in the sentinels' configuration (`sentinel monitor <name> …`)",
    usedBy: ["coordinator", "cli", "gateway"],
  },
  {
    name: "REDIS_SENTINEL_USERNAME",
    schema: z.string().min(1).optional(),
    default: "— (default user)",
    description: "ACL user the sentinels themselves ask for (they are separate from the primary's users)",
    usedBy: ["coordinator", "cli", "gateway"],
  },
  {
    name: "REDIS_SENTINEL_PASSWORD",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "password of REDIS_SENTINEL_USERNAME (or of the sentinels' `requirepass`)",
    usedBy: ["coordinator", "cli", "gateway"],
    secret: "value",
  },
  {
    name: "AGENTMESH_REDIS_WAIT_REPLICAS",
    schema: int(0).max(16).default(0),
    default: "0",
    description:
      "replicas that must confirm a commit (Redis `WAIT`) before its tasks and events are published; 0 on a single node, the number of replicas behind Sentinel (docs/redis-failover.md)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_REDIS_WAIT_TIMEOUT_MS",
    schema: int(1).default(1000),
    default: "1000",
    description: "how long a commit waits for those replicas; fewer in time = the input is retried",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_PREFIX",
    schema: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,39}$/)
      .default("agentmesh"),
    default: "agentmesh",
    description: "prefix of every subject, stream and Redis key",
    usedBy: ["all"],
  },
  {
    name: "LOG_LEVEL",
    schema: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    default: "info",
    description: "pino log level",
    usedBy: ["all"],
  },
  {
    name: "AGENTMESH_LOG_PAYLOADS",
    schema: flag.default(false),
    default: "0",
    description: "log prompts and task payloads (off: they may hold user data)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_CRASH_AT",
    schema: z.string().max(40).optional(),
    default: "—",
    description: "fault injection: exit at this named crash point (tests only)",
    usedBy: ["coordinator", "agents"],
  },
  {
    name: "AGENTMESH_METRICS_PORT",
    schema: int(0).max(65535).optional(),
    default: "— (no ops endpoint; the image sets 9464)",
    description:
      "port of this process's ops endpoint: Prometheus `GET /metrics` and the probes `GET /readyz` and `GET /healthz` (0 = any free port, logged at start); unset = no endpoint and no metrics are kept",
    usedBy: ["coordinator", "agents", "gateway"],
  },
  {
    name: "AGENTMESH_METRICS_HOST",
    schema: z.string().min(1).default("127.0.0.1"),
    default: "127.0.0.1",
    description:
      "address the ops endpoint listens on (`0.0.0.0` in a container, so Prometheus and the kubelet reach the pod)",
    usedBy: ["coordinator", "agents", "gateway"],
  },
  {
    name: "AGENTMESH_LLM_BASE_URL",
    schema: z.string().url().optional(),
    default: "— (offline engine)",
    description: "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama",
    usedBy: ["agents"],
    secret: "url",
  },
  {
    name: "AGENTMESH_LLM_API_KEY",
    schema: z.string().optional(),
    default: "—",
    description: "API key for the endpoint (redacted in logs)",
    usedBy: ["agents"],
    secret: "value",
  },
  {
    name: "AGENTMESH_LLM_MODEL",
    schema: z.string().min(1).default("gpt-4o-mini"),
    default: "gpt-4o-mini",
    description: "default model for every role",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_FAST_MODEL",
    schema: z.string().min(1).optional(),
    default: "— (`AGENTMESH_LLM_MODEL`)",
    description:
      "model of the fast tier, which ops that ask for it use (the supervisor's router, `router.route`) unless `AGENTMESH_ROLE_MODELS` names their role or op",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_ROLE_MODELS",
    schema: z.string().default(""),
    default: "—",
    description:
      "per-role or per-op overrides: `key=model@temperature/tier,…` where a key is a role or `role.op` (the op's entry wins over its role's), e.g. `critic=llama3.1@0/fast,expert=qwen2.5:32b@0.2/strong,planner.capabilities=gpt-4.1-mini@0/fast`; unknown roles and ops are refused",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_LLM_PRICES",
    schema: z.string().default(""),
    default: "—",
    description: "cost table: `model=input/output` USD per million tokens, comma-separated",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_LLM_TIMEOUT_MS",
    schema: int(1000).default(60_000),
    default: "60000",
    description: "one model HTTP request's timeout",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_LLM_MAX_ATTEMPTS",
    schema: int(1).default(3),
    default: "3",
    description: "HTTP attempts per model call on 429/5xx (ours; the client's retries are off)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_OFFLINE_LATENCY_MS",
    schema: int(0).max(600_000).default(0),
    default: "0",
    description:
      "tests and benches only: how long each answer of the offline engine takes, as a model's would (a timer in the agent; ignored with `AGENTMESH_LLM_BASE_URL`)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_AGENT_CONCURRENCY",
    schema: int(1).default(4),
    default: "4",
    description: "tasks one agent process works at once (pull batch size)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_ROLES",
    schema: z.string().default(""),
    default: "— (all)",
    description: "local runner: comma-separated roles to run in this process",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_PROMPTS_DIR",
    schema: z.string().min(1).optional(),
    default: "— (each role's own folder)",
    description:
      "folder of prompt-file overrides (`<role>.<op>.v<N>.json`); each replaces the built-in contract of the same role.op",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_PROMPT_CACHE_TTL_MS",
    schema: int(0).default(60_000),
    default: "60000",
    description: "how long a prompt fetched from Langfuse (or its absence) is used before Langfuse is asked again",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_PROMPT_FETCH_TIMEOUT_MS",
    schema: int(100).max(60_000).default(2000),
    default: "2000",
    description: "one Langfuse prompt fetch's timeout; past it the prompt file is used",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_CORPUS_DIR",
    schema: z.string().min(1).default("corpus"),
    default: "corpus",
    description: "folder of documents `corpus_search` ranks (retriever, executor); missing folder = no corpus_search",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_EMBEDDINGS_BASE_URL",
    schema: z.string().url().optional(),
    default: "— (BM25 only)",
    description:
      "OpenAI-compatible endpoint `corpus_search` embeds passages and queries with (`/embeddings`), e.g. http://127.0.0.1:11434/v1 for Ollama; set = hybrid ranking (BM25 and cosine, reciprocal rank fusion), unset = BM25 only, said in every result (docs/retrieval.md)",
    usedBy: ["agents"],
    secret: "url",
  },
  {
    name: "AGENTMESH_EMBEDDINGS_API_KEY",
    schema: z.string().optional(),
    default: "—",
    description: "API key of `AGENTMESH_EMBEDDINGS_BASE_URL` (redacted in logs, never in tool errors)",
    usedBy: ["agents"],
    secret: "value",
  },
  {
    name: "AGENTMESH_EMBEDDINGS_MODEL",
    schema: z.string().min(1).default("text-embedding-3-small"),
    default: "text-embedding-3-small",
    description:
      "embeddings model `corpus_search` asks for (`nomic-embed-text` with Ollama); part of the vectors' cache key",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_EMBEDDINGS_CACHE_DIR",
    schema: z.string().min(1).optional(),
    default: "— (memory only)",
    description:
      "folder `corpus_search` saves the corpus's vectors in (one file per embeddings model and corpus version) and reads them from at start, so a restart does not embed an unchanged corpus again",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_GRAPH_PATH",
    schema: z.string().min(1).default("corpus/graph"),
    default: "corpus/graph",
    description:
      "graph role: a `.jsonl` file, or a folder of them, of knowledge-graph triples `{subject, predicate, object, source}`, loaded at start (missing or without a triple = start-up error)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_FILE_ROOTS",
    schema: z.string().default(""),
    default: "— (no file_read)",
    description: "executor: comma-separated folders `file_read` may read",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_WEB_SEARCH_URL",
    schema: z.string().url().default("https://api.search.brave.com"),
    default: "https://api.search.brave.com",
    description: "base URL of a Brave-Search-compatible web search API (retriever, executor)",
    usedBy: ["agents"],
    secret: "url",
  },
  {
    name: "AGENTMESH_WEB_SEARCH_KEY",
    schema: z.string().optional(),
    default: "— (no web search)",
    description:
      "API key of the web search API; unset = web search answers `tool_unavailable` and the retriever skips the web",
    usedBy: ["coordinator", "agents"],
    secret: "value",
  },
  {
    name: "AGENTMESH_IMAGES_BASE_URL",
    schema: z.string().url().optional(),
    default: "— (no images)",
    description:
      "OpenAI-compatible endpoint of `generate_image` (`/images/generations`) and `analyze_image` (`/chat/completions` with an image part), e.g. https://api.openai.com/v1; unset = both answer `tool_unavailable`",
    usedBy: ["coordinator", "agents"],
    secret: "url",
  },
  {
    name: "AGENTMESH_IMAGES_API_KEY",
    schema: z.string().optional(),
    default: "—",
    description: "API key of `AGENTMESH_IMAGES_BASE_URL` (redacted in logs, never in tool errors)",
    usedBy: ["agents"],
    secret: "value",
  },
  {
    name: "AGENTMESH_IMAGE_MODEL",
    schema: z.string().min(1).default("gpt-image-1"),
    default: "gpt-image-1",
    description: "model `generate_image` asks for",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_VISION_MODEL",
    schema: z.string().min(1).default("gpt-4o-mini"),
    default: "gpt-4o-mini",
    description: "vision model `analyze_image` asks",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_MCP_SERVERS",
    schema: z.string().default(""),
    default: "— (no MCP servers)",
    description:
      'MCP servers as a JSON object of name → `{"command":"…","args":[…]}` (stdio, minimal env) or `{"url":"http://…/mcp"}` (streamable HTTP), each with optional `timeoutMs` and `allow` (role → `"*"` or tool names); checked by `parseMcpServers` of `@agentmesh/tools`; no credentials in it. The mcp role (halo: `biomcp`, `llama_mcp`, the server named in its task) calls only the tools `allow` gives `mcp`; the executor registers the tools of every server as `mcp.<server>.<tool>`, callable by the roles `allow` names',
    usedBy: ["coordinator", "agents"],
  },
  {
    name: "AGENTMESH_RPC",
    schema: flag.default(false),
    default: "0",
    description:
      "debugging: also serve each op on `<p>.rpc.<role>.<op>` (direct calls with any session id; off in production)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_TEST_TOOLS",
    schema: flag.default(false),
    default: "0",
    description: "executor: also register the test-only tools `test_flaky` and `test_slow` (tests only)",
    usedBy: ["agents"],
  },
  {
    name: "AGENTMESH_TASK_ACK_WAIT_MS",
    schema: int(1000).default(30_000),
    default: "30000",
    description: "task lease; agents heartbeat every third of it",
    usedBy: ["coordinator", "agents"],
  },
  {
    name: "AGENTMESH_INBOX_ACK_WAIT_MS",
    schema: int(1000).default(30_000),
    default: "30000",
    description: "inbox lease; a coordinator that dies mid-step has its message redelivered after this",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_TASK_MAX_DELIVER",
    schema: int(1).default(5),
    default: "5",
    description: "deliveries of one task before a typed failure",
    usedBy: ["coordinator", "agents"],
  },
  {
    name: "AGENTMESH_CLARIFY_MAX_CLARIFICATIONS",
    schema: int(0).max(10).default(2),
    default: "2",
    description:
      "clarify: clarifications in a row (per thread) before the orchestrator forces research (`max_clarifications`)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_CLARIFY_MAX_HISTORY",
    schema: int(1).max(40).default(10),
    default: "10",
    description: "clarify: the latest messages the orchestrator's prompt shows (`max_history`)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_HALO_CAPABILITIES",
    schema: z.string().default(""),
    default: "— (derived)",
    description:
      "halo: the capabilities this deployment serves, comma-separated (`graph,rag,biomcp,web,llama_mcp,chitchat`); unset = graph, rag and chitchat, plus web when `AGENTMESH_WEB_SEARCH_KEY` is set and each of biomcp, llama_mcp that `AGENTMESH_MCP_SERVERS` names; the planner never picks another",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_HALO_JOIN_DEADLINE_MS",
    schema: int(100).max(600_000).default(30_000),
    default: "30000",
    description:
      "halo: how long the specialists' fan-out waits before it joins without the late ones (capped by `AGENTMESH_TASK_DEADLINE_MS`)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_HALO_DOMAIN_HINTS",
    schema: z.string().default(""),
    default: "— (the workflow's table)",
    description:
      'halo: the judge\'s domain hints as JSON, capability → `{"bonus":1,"keywords":["…"]}`; replaces the workflow\'s own table',
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_SUPERVISOR_TOOLS",
    schema: z.string().default(""),
    default: "— (derived)",
    description:
      "supervisor: the tools its agents may call, comma-separated (`web_search,corpus_search,generate_image,analyze_image,run_python,run_js`); unset = corpus_search, run_python and run_js, plus web_search when `AGENTMESH_WEB_SEARCH_KEY` is set and generate_image, analyze_image when `AGENTMESH_IMAGES_BASE_URL` is",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS",
    schema: int(0).max(10).default(5),
    default: "5",
    description:
      "critic-chain: tool rounds per researcher or expert turn (each an executor.call); at 0 they answer without tools",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_TASK_DEADLINE_MS",
    schema: int(1000).default(300_000),
    default: "300000",
    description: "deadline of each awaited task",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_SESSION_DEADLINE_MS",
    schema: int(1000).default(1_800_000),
    default: "1800000",
    description: "wall-clock deadline of a session",
    usedBy: ["coordinator", "gateway"],
  },
  {
    name: "AGENTMESH_MAX_STEPS",
    schema: int(1).default(100),
    default: "100",
    description: "default step budget per session",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_TOOL_CALLS_PER_SESSION",
    schema: int(0).default(100),
    default: "100",
    description:
      "tool calls (executor tasks, each attempt counted) one session may make in all, counted in the session by the coordinator and passed to the executor as an allowance",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_TOKENS",
    schema: int(1).optional(),
    default: "— (its ceiling)",
    description: "default token budget per session",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_COST_USD",
    schema: z.coerce.number().positive().optional(),
    default: "— (its ceiling)",
    description: "default cost budget per session (USD)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_WALL_MS",
    schema: int(1000).optional(),
    default: "— (its ceiling)",
    description: "default wall-clock budget per session (ends it as budget_exceeded)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_PAUSE_TIMEOUT_MS",
    schema: int(1000).default(24 * 3600 * 1000),
    default: "86400000",
    description:
      "how long a session waits for a person's answer before it fails as expired (must be below AGENTMESH_SESSION_TTL_MS)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_STEPS_CEILING",
    schema: int(1).default(500),
    default: "500",
    description: "highest step budget a session may have: a client's larger value or explicit null gets this",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_TOKENS_CEILING",
    schema: int(1).default(2_000_000),
    default: "2000000",
    description: "highest token budget a session may have (also the budget when no default is set)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_COST_USD_CEILING",
    schema: z.coerce.number().positive().default(10),
    default: "10",
    description: "highest cost budget a session may have, USD (also the budget when no default is set)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_MAX_WALL_MS_CEILING",
    schema: int(1000).default(7_200_000),
    default: "7200000",
    description: "highest wall-clock budget a session may have (also the budget when no default is set)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_COORDINATOR_CONCURRENCY",
    schema: int(1).default(16),
    default: "16",
    description: "inbox messages one coordinator steps at once",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_SESSION_TTL_MS",
    schema: int(1000).default(7 * 24 * 3600 * 1000),
    default: "604800000",
    description: "sliding TTL of a live session's keys",
    usedBy: ["coordinator", "gateway"],
  },
  {
    name: "AGENTMESH_STREAM_REPLICAS",
    schema: z.coerce.number().int().min(1).max(5).default(1),
    default: "1",
    description:
      "replicas of every JetStream stream and of the KV bucket (1 on one server; 3 on a cluster of at least 3 nodes); raising it on a running deployment moves its streams (docs/nats-cluster.md)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_CANCELLED_TTL_MS",
    schema: int(1000).default(24 * 3600 * 1000),
    default: "86400000",
    description: "how long a cancelled or ended session stays in the KV bucket agents check before starting a task",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_FINISHED_TTL_MS",
    schema: int(1000).default(24 * 3600 * 1000),
    default: "86400000",
    description: "TTL of a finished session's keys",
    usedBy: ["coordinator", "gateway"],
  },
  {
    name: "AGENTMESH_LONG_TERM_REFS_MAX",
    schema: int(1).max(BLACKBOARD_LIMITS.maxLongTermRefs).default(BLACKBOARD_LIMITS.maxLongTermRefs),
    default: String(BLACKBOARD_LIMITS.maxLongTermRefs),
    description: `long-term references a thread keeps for its next sessions, the latest (at most ${BLACKBOARD_LIMITS.maxLongTermRefs}; docs/workflows/blackboard.md)`,
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_LONG_TERM_REFS_TTL_MS",
    schema: int(1000).default(LIMITS.longTermRefsTtlMs),
    default: String(LIMITS.longTermRefsTtlMs),
    description:
      "how long a thread's long-term references live after the last session that wrote them ended (never longer than the thread)",
    usedBy: ["coordinator"],
  },
  {
    name: "AGENTMESH_GATEWAY_HOST",
    schema: z.string().min(1).default("127.0.0.1"),
    default: "127.0.0.1",
    description: "address the gateway listens on (`0.0.0.0` in a container)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_GATEWAY_PORT",
    schema: int(0).max(65535).default(8080),
    default: "8080",
    description: "HTTP port of the gateway (0 = any free port, logged at start)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_API_KEYS",
    schema: z.string().default(""),
    default: "—",
    description:
      "gateway API keys, hashed: `name=sha256:<hex>,…` (`pnpm gateway:key <name>` makes one); the name owns the sessions its key creates",
    usedBy: ["gateway"],
    secret: "value",
  },
  {
    name: "AGENTMESH_API_KEYS_FILE",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "file of gateway API keys, one `name=sha256:<hex>` per line (with or instead of `AGENTMESH_API_KEYS`)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_GATEWAY_ANONYMOUS",
    schema: flag.default(false),
    default: "0",
    description: "gateway: requests without a key act as owner `anonymous` (local use only; never on a shared network)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_DEFAULT_WORKFLOW",
    schema: z.string().min(1).max(40).default("supervisor"),
    default: "supervisor",
    description: "workflow of a gateway query (`POST /api/v1/query`) that names none",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_RATE_LIMIT",
    schema: int(1).default(60),
    default: "60",
    description:
      "gateway: POST requests one API key may make per `AGENTMESH_RATE_WINDOW_MS`, across all replicas (429 beyond)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_RATE_WINDOW_MS",
    schema: int(1000).default(60_000),
    default: "60000",
    description: "gateway: the rate limit's sliding window",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_MAX_CONCURRENT_SESSIONS",
    schema: int(1).default(10),
    default: "10",
    description: "gateway: sessions one API key may have running at once, across all replicas (429 beyond)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_IDEMPOTENCY_TTL_MS",
    schema: int(1000).default(86_400_000),
    default: "86400000",
    description:
      "gateway: how long an `Idempotency-Key` remembers the request it named, across all replicas: the same key with another body is a 422 until then",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_MAX_BODY_BYTES",
    schema: int(1024).default(256 * 1024),
    default: "262144",
    description: "gateway: largest request body (413 beyond)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_CORS_ORIGINS",
    schema: originList.default([]),
    default: "— (none)",
    description:
      "gateway: web origins (`https://app.example.com`, comma-separated) whose pages may call `/api` and `/v1` from a browser; none by default, so no other site's page can read an answer",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_GATEWAY_ALLOWED_HOSTS",
    schema: hostList.default([]),
    default: "— (loopback names only)",
    description:
      "gateway, anonymous mode: Host header names accepted besides `localhost`, `127.0.0.1` and `[::1]` (comma-separated); any other is refused, so a page on another site cannot reach a keyless gateway through DNS rebinding",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_HTTP_KEEPALIVE_MS",
    schema: int(1000).default(65_000),
    default: "65000",
    description:
      "gateway: how long an idle keep-alive connection stays open (above the 60 s idle timeout of common load balancers, so they close first)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_HTTP_HEADERS_TIMEOUT_MS",
    schema: int(1000).default(20_000),
    default: "20000",
    description: "gateway: time a client has to send a request's headers",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_HTTP_REQUEST_TIMEOUT_MS",
    schema: int(1000).default(60_000),
    default: "60000",
    description:
      "gateway: time a client has to send a whole request, body included (a response that streams is not bound by it)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_HTTP_MAX_CONNECTIONS",
    schema: int(1).default(4096),
    default: "4096",
    description: "gateway: open HTTP connections per replica; the server refuses more",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_STREAM_BUFFER_BYTES",
    schema: int(4096).default(1024 * 1024),
    default: "1048576",
    description:
      "gateway: bytes of events an open stream holds for a client that reads slower than its session; past it the stream ends with an `error` event to resume from (`Last-Event-ID`)",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_MAX_OPEN_STREAMS",
    schema: int(1).default(2_000),
    default: "2000",
    description:
      "gateway: streams (SSE and `/v1` completions) one replica serves at once, counted in its memory; one more is a 503 with `Retry-After: 1`, before any session starts",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_MAX_STREAMS_PER_KEY",
    schema: int(1).default(20),
    default: "20",
    description:
      "gateway: streams one API key may have open at once across all replicas, each a lease in Redis that its replica renews every 10 s and that lapses 30 s after a crash; one more is a 429 `too_many_streams` with `Retry-After: 1`",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_STREAM_OPEN_RATE",
    schema: int(1).default(120),
    default: "120",
    description:
      "gateway: streams one API key may open per minute across all replicas (a reconnect counts), apart from the request rate; one more is a 429 `rate_limited` with `Retry-After`",
    usedBy: ["gateway"],
  },
  {
    name: "AGENTMESH_ZOD_COMPILE",
    schema: z.enum(["on", "off"]).default("on"),
    default: "on",
    description:
      "`off` checks messages and commits with zod's own parser instead of its compiled one (same results and errors, slower); a way out should a zod upgrade's compiler ever disagree",
    usedBy: ["all"],
  },
  {
    name: "AGENTMESH_REQUIRE_DURABLE",
    schema: flag.default(false),
    default: "0",
    description: "refuse to start unless Redis has AOF, appendfsync always and no eviction",
    usedBy: ["coordinator"],
  },
  {
    name: "OTEL_EXPORTER_OTLP_ENDPOINT",
    schema: z.string().url().optional(),
    default: "— (no export)",
    description: "tracing: OTLP/HTTP (protobuf) collector base URL; traces go to `<url>/v1/traces`",
    usedBy: ["coordinator", "agents", "gateway"],
    secret: "url",
  },
  {
    name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    schema: z.string().url().optional(),
    default: "—",
    description: "tracing: full OTLP/HTTP traces URL, used as is (wins over `OTEL_EXPORTER_OTLP_ENDPOINT`)",
    usedBy: ["coordinator", "agents", "gateway"],
    secret: "url",
  },
  {
    name: "OTEL_EXPORTER_OTLP_HEADERS",
    schema: z.string().optional(),
    default: "—",
    description: "tracing: headers of every OTLP export, `key=value,…` (values URL-encoded), e.g. a collector's auth",
    usedBy: ["coordinator", "agents", "gateway"],
    secret: "value",
  },
  {
    name: "OTEL_SERVICE_NAME",
    schema: z.string().min(1).max(100).optional(),
    default: "— (the process: `coordinator`, `gateway`, the role names)",
    description: "tracing: `service.name` of this process's spans",
    usedBy: ["coordinator", "agents", "gateway"],
  },
  {
    name: "OTEL_BSP_SCHEDULE_DELAY",
    schema: int(1).max(60_000).default(5000),
    default: "5000",
    description: "tracing: longest wait (ms) before buffered spans are exported",
    usedBy: ["coordinator", "agents", "gateway"],
  },
  {
    name: "OTEL_SDK_DISABLED",
    schema: flag.default(false),
    default: "0",
    description: "tracing: off even when an endpoint is set",
    usedBy: ["coordinator", "agents", "gateway"],
  },
  {
    name: "TRACEPARENT",
    schema: z
      .string()
      .regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, "a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>")
      .optional(),
    default: "— (a new trace)",
    description: "CLI `ask`: the W3C traceparent the session's trace continues (a caller's span, e.g. a CI job's)",
    usedBy: ["cli"],
  },
  {
    name: "LANGFUSE_HOST",
    schema: z.string().url().optional(),
    default: "— (no Langfuse)",
    description:
      "a Langfuse server (e.g. https://cloud.langfuse.com), with both keys: agents take prompts from it by name (`GET /api/public/v2/prompts/<name>?label=production`, text prompts with `{{var}}` placeholders; the orchestrator's is `agent_orchestrator`, other ops' their prompt file id; the prompt files are the fallback when it is down, slow or lacks one), and spans also go to its OTLP endpoint `<host>/api/public/otel/v1/traces`",
    usedBy: ["coordinator", "agents", "gateway"],
    secret: "url",
  },
  {
    name: "LANGFUSE_PUBLIC_KEY",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "Langfuse public key (`pk-lf-…`, basic auth user), with `LANGFUSE_HOST`",
    usedBy: ["coordinator", "agents", "gateway"],
  },
  {
    name: "LANGFUSE_SECRET_KEY",
    schema: z.string().min(1).optional(),
    default: "—",
    description: "Langfuse secret key (`sk-lf-…`, basic auth password), with `LANGFUSE_HOST` (redacted in logs)",
    usedBy: ["coordinator", "agents", "gateway"],
    secret: "value",
  },
] as const satisfies readonly EnvVar[];

export type EnvName = (typeof ENV_VARS)[number]["name"];
type VarOf<N extends EnvName> = Extract<(typeof ENV_VARS)[number], { name: N }>;
export type EnvValues<N extends EnvName> = { readonly [K in N]: z.infer<VarOf<K>["schema"]> };

/** The error for bad configuration: every problem listed at once, code `invalid_config`. */
export function configError(problems: readonly string[]): AgentmeshError {
  return new AgentmeshError("invalid_config", `invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}

/**
 * The secret values in `env` (every variable of the table marked `secret`): API keys whole, and
 * the passwords and tokens in URLs. Give them to `createLogger` and `describeFailure`.
 */
export function secretsOf(env: Record<string, string | undefined>): readonly string[] {
  const out = new Set<string>();
  for (const v of ENV_VARS as readonly EnvVar[]) {
    const raw = env[v.name];
    if (!raw || v.secret === undefined) continue;
    if (v.secret === "value") out.add(raw);
    else for (const s of secretsOfUrl(raw)) out.add(s);
  }
  return [...out];
}

/** A variable's value as an error may show it: never a secret value, URLs without credentials. */
function shown(spec: EnvVar, raw: string | undefined): string {
  if (raw === undefined) return "undefined";
  if (spec.secret === "value") return `<${raw.length} characters, not shown>`;
  // An invalid URL may not parse into userinfo and host: hide everything up to its last `@`.
  if (spec.secret === "url")
    return JSON.stringify(
      raw.replace(
        /^([a-z][a-z0-9+.-]*:\/\/)?[^]*@/i,
        (_m, scheme: string | undefined) => `${scheme ?? ""}${REDACTED}@`,
      ),
    );
  return JSON.stringify(raw);
}

/**
 * Settings that act on the whole process rather than on one service's config, applied as soon as
 * a config that lists them is parsed, so before the process checks any message: contracts'
 * compiled parsing (`AGENTMESH_ZOD_COMPILE`).
 */
function applyProcessSettings(values: Readonly<Record<string, unknown>>): void {
  if (values.AGENTMESH_ZOD_COMPILE !== undefined) setCompiledParsing(values.AGENTMESH_ZOD_COMPILE === "on");
}

/**
 * Parses the named variables from `env`, listing every problem at once; the result is frozen.
 * The process-wide settings among them take effect here (`applyProcessSettings`).
 */
export function parseEnv<N extends EnvName>(
  names: readonly N[],
  env: Record<string, string | undefined>,
): EnvValues<N> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of names) {
    const spec = ENV_VARS.find((v) => v.name === name);
    if (!spec) throw new Error(`unknown env var ${name}`);
    const raw = env[name];
    const r = (spec.schema as z.ZodType).safeParse(raw === "" ? undefined : raw);
    if (r.success) out[name] = r.data;
    else problems.push(`${name}=${shown(spec, raw)}: ${formatZodError(r.error)}`);
  }
  if (problems.length) throw configError(problems);
  applyProcessSettings(out);
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
  const tls =
    e.NATS_TLS_CA || e.NATS_TLS_CERT || e.NATS_TLS_KEY
      ? {
          ...(e.NATS_TLS_CA ? { caFile: e.NATS_TLS_CA } : {}),
          ...(e.NATS_TLS_CERT ? { certFile: e.NATS_TLS_CERT } : {}),
          ...(e.NATS_TLS_KEY ? { keyFile: e.NATS_TLS_KEY } : {}),
        }
      : undefined;
  return Object.freeze({
    ...(e.NATS_NKEY_SEED_FILE ? { nkeySeedFile: e.NATS_NKEY_SEED_FILE } : {}),
    ...(tls ? { tls } : {}),
  });
}

/** The Redis Sentinel variables every Redis client reads. */
export const REDIS_SENTINEL_VARS = [
  "REDIS_SENTINELS",
  "REDIS_SENTINEL_MASTER",
  "REDIS_SENTINEL_USERNAME",
  "REDIS_SENTINEL_PASSWORD",
] as const;

/** Where the sentinels are and how to log in to them, in the shape `connectRedis` takes as `sentinel`. */
export interface RedisSentinelSettings {
  readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly masterName: string;
  readonly username?: string;
  readonly password?: string;
}

/** The Sentinel settings from parsed REDIS_SENTINEL_VARS; undefined when no sentinel is named. */
export function redisSentinel(e: EnvValues<(typeof REDIS_SENTINEL_VARS)[number]>): RedisSentinelSettings | undefined {
  if (e.REDIS_SENTINELS === undefined) return undefined;
  return Object.freeze({
    sentinels: e.REDIS_SENTINELS,
    masterName: e.REDIS_SENTINEL_MASTER,
    ...(e.REDIS_SENTINEL_USERNAME === undefined ? {} : { username: e.REDIS_SENTINEL_USERNAME }),
    ...(e.REDIS_SENTINEL_PASSWORD === undefined ? {} : { password: e.REDIS_SENTINEL_PASSWORD }),
  });
}

/** Where NATS and Redis are and how to reach them: read by every service that talks to both. */
export const CONNECTION_VARS = [
  "NATS_URL",
  "REDIS_URL",
  "REDIS_TLS_CA",
  ...REDIS_SENTINEL_VARS,
  "AGENTMESH_PREFIX",
  ...NATS_ACCESS_VARS,
] as const;

/** The connection part of a service's config, from parsed CONNECTION_VARS. */
export function connectionConfig(e: EnvValues<(typeof CONNECTION_VARS)[number]>) {
  return {
    natsUrl: e.NATS_URL,
    nats: natsAccess(e),
    redisUrl: e.REDIS_URL,
    redisTlsCa: e.REDIS_TLS_CA,
    redisSentinel: redisSentinel(e),
    prefix: e.AGENTMESH_PREFIX,
  };
}

/** The tracing variables every service reads (OpenTelemetry's standard ones and Langfuse's). */
export const TRACING_VARS = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_SERVICE_NAME",
  "OTEL_BSP_SCHEDULE_DELAY",
  "OTEL_SDK_DISABLED",
  "LANGFUSE_HOST",
  "LANGFUSE_PUBLIC_KEY",
  "LANGFUSE_SECRET_KEY",
] as const;

/** `key=value,…` with URL-encoded values (the OTLP exporter headers format); throws a message naming the bad entry. */
function otlpHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [i, part] of (raw ?? "").split(",").entries()) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    const key = eq > 0 ? part.slice(0, eq).trim() : "";
    // never the value in the message: it is usually a credential
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key))
      throw new Error(`OTEL_EXPORTER_OTLP_HEADERS: entry ${i + 1} is not key=value`);
    try {
      out[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      throw new Error(`OTEL_EXPORTER_OTLP_HEADERS: the value of ${key} is not URL-encoded`);
    }
  }
  return out;
}

const joinUrl = (base: string, path: string) => `${base.replace(/\/+$/, "")}${path}`;

/**
 * Where this process's spans go: the OTLP/HTTP endpoint of the standard variables and/or
 * Langfuse's OTLP endpoint (basic auth with its keys). None configured (or `OTEL_SDK_DISABLED`)
 * = tracing off. A Langfuse host without both keys is a configuration error: added to `found`
 * when given (the service lists every problem at once), else thrown.
 */
export function tracingConfig(e: EnvValues<(typeof TRACING_VARS)[number]>, found?: string[]): TracingConfig {
  const problems: string[] = found ?? [];
  const targets: TraceExportTarget[] = [];
  let headers: Record<string, string> = {};
  try {
    headers = otlpHeaders(e.OTEL_EXPORTER_OTLP_HEADERS);
  } catch (err) {
    problems.push((err as Error).message);
  }
  const otlp =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : joinUrl(e.OTEL_EXPORTER_OTLP_ENDPOINT, "/v1/traces"));
  if (otlp !== undefined) targets.push({ url: otlp, headers });
  if (e.LANGFUSE_HOST !== undefined) {
    if (e.LANGFUSE_PUBLIC_KEY === undefined || e.LANGFUSE_SECRET_KEY === undefined) {
      problems.push("LANGFUSE_HOST is set: LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are required too");
    } else {
      const auth = Buffer.from(`${e.LANGFUSE_PUBLIC_KEY}:${e.LANGFUSE_SECRET_KEY}`).toString("base64");
      targets.push({
        url: joinUrl(e.LANGFUSE_HOST, "/api/public/otel/v1/traces"),
        headers: { Authorization: `Basic ${auth}` },
      });
    }
  }
  if (found === undefined && problems.length) throw configError(problems);
  return Object.freeze({
    targets: e.OTEL_SDK_DISABLED ? [] : targets,
    serviceName: e.OTEL_SERVICE_NAME,
    scheduleDelayMs: e.OTEL_BSP_SCHEDULE_DELAY,
  });
}

/** The variables of a process's metrics endpoint. */
export const METRICS_VARS = ["AGENTMESH_METRICS_PORT", "AGENTMESH_METRICS_HOST"] as const;

/** Where a process serves its metrics; null when it keeps none. */
export interface MetricsSettings {
  readonly host: string;
  /** 0 = any free port. */
  readonly port: number;
}

/** MetricsSettings from parsed METRICS_VARS: null when no port is set. */
export function metricsSettings(e: EnvValues<(typeof METRICS_VARS)[number]>): MetricsSettings | null {
  return e.AGENTMESH_METRICS_PORT === undefined
    ? null
    : Object.freeze({ host: e.AGENTMESH_METRICS_HOST, port: e.AGENTMESH_METRICS_PORT });
}
