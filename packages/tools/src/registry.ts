import { ErrorCode, RoleName } from "@agentmesh/contracts";
import { z } from "zod";

/** How a tool is retried: at most 3 attempts in all, exponential backoff with jitter. */
export interface RetryPolicy {
  /** Attempts in total, first one included; clamped to 1..3. */
  readonly maxAttempts: number;
  /** Delay before the second attempt. */
  readonly initialIntervalMs: number;
  /** Each further delay is the previous one times this. */
  readonly backoffCoefficient: number;
  readonly maximumIntervalMs: number;
  /** Each delay is moved by up to this fraction either way (0.1 = ±10%), so callers do not retry in step. */
  readonly jitter: number;
  /** Codes this tool never retries even when the code table calls them retryable (e.g. `timeout` for code runners). */
  readonly nonRetryable: readonly ErrorCode[];
}

/** What a tool's `execute` gets besides its validated input. */
export interface ToolContext {
  /** Aborted at the attempt's deadline or when the caller gives up; long work must stop (kill its worker). */
  readonly signal: AbortSignal;
  readonly sessionId: string;
  readonly taskId: string;
  /** 1-based attempt number. */
  readonly attempt: number;
  /** Epoch ms at which this attempt times out. */
  readonly deadline: number;
  /** The task id, given only to tools with side effects: the same task never applies its effect twice. */
  readonly idempotencyKey: string | undefined;
}

/** A tool as its author writes it. */
export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** `snake_case`, unique in a registry; an MCP server's tool is `mcp.<server>.<tool>`. */
  readonly name: string;
  /** What the tool does, for a planner choosing tools. */
  readonly description: string;
  readonly input: I;
  /** The input's JSON Schema when the tool brings its own (an MCP server's); otherwise derived from `input`. */
  readonly inputJsonSchema?: Readonly<Record<string, unknown>>;
  readonly output: O;
  /** Roles that may call it; an empty list means nobody. */
  readonly allowedRoles: readonly RoleName[];
  /** Per-attempt limit; the registry's default (5 s) when absent. */
  readonly timeoutMs?: number;
  readonly retry?: Partial<RetryPolicy>;
  /** True when a call changes something outside (sends, writes): it then gets an idempotency key. */
  readonly sideEffects?: boolean;
  // method syntax on purpose: a tool taking a narrower input must still fit `ToolDefinition`
  execute(input: z.output<I>, ctx: ToolContext): Promise<z.input<O>>;
}

/** A registered tool: the definition with its limits resolved and frozen. */
export interface RegisteredTool extends ToolDefinition {
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly sideEffects: boolean;
  /** JSON Schema of the input, computed once at registration. */
  readonly inputJsonSchema: Readonly<Record<string, unknown>>;
}

/** What a planner sees of a tool. */
export interface ToolDescription {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly timeoutMs: number;
  readonly allowedRoles: readonly RoleName[];
}

/** The set of tools a process can call. */
export interface ToolRegistry {
  /** Adds a tool; throws on a duplicate or malformed definition (a programming error). */
  register(tool: ToolDefinition): void;
  get(name: string): RegisteredTool | undefined;
  /** Tools for discovery, sorted by name; with `role`, only those that role may call. */
  list(filter?: { readonly role?: RoleName }): ToolDescription[];
}

/** Options of a registry. */
export interface ToolRegistryOptions {
  /** Per-attempt timeout of tools that set none (within the 3-5 s range). */
  readonly defaultTimeoutMs?: number;
}

/** The retry policy a tool gets for every field it leaves out. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 3,
  initialIntervalMs: 200,
  backoffCoefficient: 2,
  maximumIntervalMs: 2000,
  jitter: 0.1,
  nonRetryable: [],
});

/** Hard ceiling on attempts per call, whatever a tool asks for. */
export const MAX_ATTEMPTS = 3;
const NAME = /^[a-z][a-z0-9_]{0,63}$/;
// An MCP tool keeps its server's spelling after the prefix; 80 characters in all fit a call record.
const MCP_NAME = /^mcp\.[a-z][a-z0-9_]{0,23}\.[A-Za-z0-9_-]{1,50}$/;

/** Identity helper that infers a tool's input and output types from its schemas. */
export function defineTool<I extends z.ZodType, O extends z.ZodType>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return tool;
}

function resolveRetry(p: Partial<RetryPolicy> | undefined, name: string): RetryPolicy {
  const r = { ...DEFAULT_RETRY_POLICY, ...p, nonRetryable: Object.freeze([...(p?.nonRetryable ?? [])]) };
  const bad = (why: string): never => {
    throw new Error(`tool "${name}": retry policy ${why}`);
  };
  if (!Number.isInteger(r.maxAttempts) || r.maxAttempts < 1) bad("maxAttempts must be an integer >= 1");
  if (!(r.initialIntervalMs >= 0) || !(r.maximumIntervalMs >= r.initialIntervalMs))
    bad("intervals must satisfy 0 <= initial <= maximum");
  if (!(r.backoffCoefficient >= 1)) bad("backoffCoefficient must be >= 1");
  if (!(r.jitter >= 0 && r.jitter <= 1)) bad("jitter must be within 0..1");
  for (const c of r.nonRetryable) if (!ErrorCode.safeParse(c).success) bad(`names unknown code "${c}"`);
  return Object.freeze({ ...r, maxAttempts: Math.min(r.maxAttempts, MAX_ATTEMPTS) });
}

function jsonSchemaOf(schema: z.ZodType, name: string): Record<string, unknown> {
  try {
    return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`tool "${name}": input schema has no JSON Schema form: ${(err as Error).message}`, { cause: err });
  }
}

class ToolRegistryImpl implements ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();
  readonly #defaultTimeoutMs: number;

  constructor(opts: ToolRegistryOptions) {
    this.#defaultTimeoutMs = opts.defaultTimeoutMs ?? 5000;
    if (!(this.#defaultTimeoutMs > 0)) throw new Error("defaultTimeoutMs must be > 0");
  }

  register(tool: ToolDefinition): void {
    if (!NAME.test(tool.name) && !MCP_NAME.test(tool.name))
      throw new Error(`tool name "${tool.name}" must match ${NAME} or ${MCP_NAME}`);
    if (this.#tools.has(tool.name)) throw new Error(`tool "${tool.name}" is already registered`);
    if (!tool.description.trim()) throw new Error(`tool "${tool.name}" needs a description`);
    for (const r of tool.allowedRoles)
      if (!RoleName.safeParse(r).success) throw new Error(`tool "${tool.name}": unknown role "${r}"`);
    const timeoutMs = tool.timeoutMs ?? this.#defaultTimeoutMs;
    if (!(timeoutMs > 0)) throw new Error(`tool "${tool.name}": timeoutMs must be > 0`);
    const registered: RegisteredTool = Object.freeze({
      ...tool,
      // keep `this` of a tool written as an object with a method
      execute: tool.execute.bind(tool),
      allowedRoles: Object.freeze([...tool.allowedRoles]),
      timeoutMs,
      retry: resolveRetry(tool.retry, tool.name),
      sideEffects: tool.sideEffects ?? false,
      inputJsonSchema: Object.freeze(tool.inputJsonSchema ?? jsonSchemaOf(tool.input, tool.name)),
    });
    this.#tools.set(tool.name, registered);
  }

  get(name: string): RegisteredTool | undefined {
    return this.#tools.get(name);
  }

  list(filter: { readonly role?: RoleName } = {}): ToolDescription[] {
    return [...this.#tools.values()]
      .filter((t) => filter.role === undefined || t.allowedRoles.includes(filter.role))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputJsonSchema,
        timeoutMs: t.timeoutMs,
        allowedRoles: t.allowedRoles,
      }));
  }
}

/** Creates a registry, optionally with tools already in it. */
export function createToolRegistry(
  tools: readonly ToolDefinition[] = [],
  opts: ToolRegistryOptions = {},
): ToolRegistry {
  const registry = new ToolRegistryImpl(opts);
  for (const t of tools) registry.register(t);
  return registry;
}
