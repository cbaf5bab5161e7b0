import type { OpenAI } from "openai";
import type * as OpenAISdk from "openai";
import type { ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { z } from "zod";
import { AgentmeshError, formatZodError, redactUrls, Tier, type Usage } from "@agentmesh/contracts";
import { forwardDelta } from "./stream.js";
import {
  backoffDelay,
  classifyAttemptError,
  DEFAULT_BACKOFF,
  realSleep,
  sleepUnlessAborted,
  type BackoffPolicy,
} from "./retry.js";
import { parseReply, schemaInstruction, schemaNameFor, toStrictJsonSchema } from "./structured.js";
import type {
  ModelMode,
  ModelPort,
  ModelReply,
  ModelRequest,
  RoleModelConfig,
  SchemaRequest,
  StructuredRequest,
  TextRequest,
} from "./types.js";

/** How structured output is asked for; "auto" starts with json_schema and falls back. */
export type StructuredMode = "auto" | "json_schema" | "json_object" | "prompt";

/** Price of a model in USD per million tokens. */
export interface ModelPrice {
  readonly input_per_mtok: number;
  readonly output_per_mtok: number;
}

/** Options of the OpenAI-compatible adapter; validated once, at creation. */
export interface OpenAIModelOptions {
  /** The API base, e.g. https://api.openai.com/v1 or http://localhost:11434/v1. */
  readonly baseURL: string;
  /** Sent as a bearer token; local servers usually need none. */
  readonly apiKey?: string;
  /** Model settings keyed `<role>.<op>` (one op, e.g. a fast planner step) or `<role>`; the most specific key wins, then the call's tier, then `defaultRole`. */
  readonly roles: Readonly<Record<string, RoleModelConfig>>;
  readonly defaultRole: RoleModelConfig;
  /** Settings per tier, for calls that ask for a tier (`ModelCall.tier`) and whose role and op `roles` does not name. */
  readonly tiers?: Readonly<Partial<Record<Tier, RoleModelConfig>>>;
  /** Limit for one HTTP attempt, including reading a streamed reply. */
  readonly timeoutMs: number;
  /** HTTP attempts per exchange (first try + retries); default 3. */
  readonly maxHttpAttempts?: number;
  readonly prices?: Readonly<Record<string, ModelPrice>>;
  /** Structured output's format; json_object requests send json_object unless this (or "auto", once rejected) is "prompt". */
  readonly structuredMode?: StructuredMode;
  /** Injected for tests; the default is a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Backoff tuning; tests pin `random`. */
  readonly backoff?: Partial<BackoffPolicy>;
}

let sdkImport: Promise<typeof OpenAISdk> | null = null;
/** The `openai` package, imported by the first request: a process on the offline engine never loads it. */
const loadOpenAI = (): Promise<typeof OpenAISdk> =>
  (sdkImport ??= import("openai").catch((err: unknown) => {
    // A broken install is a typed, non-retryable failure of every call, never a raw module error.
    throw new AgentmeshError(
      "model_error",
      `the openai client cannot be loaded: ${err instanceof Error ? err.message : String(err)}`,
      { retryable: false, cause: err },
    );
  }));

/** HTTP attempts per exchange unless configured. */
export const DEFAULT_MAX_HTTP_ATTEMPTS = 3;

/**
 * The most HTTP requests one `complete()` can send. Structured: two exchanges (the first answer
 * and the one validation retry), each up to `maxHttpAttempts` requests; format fallbacks
 * (json_schema → json_object → prompt) are requests within that budget, not extra ones.
 * json_object and text: one exchange, so `maxHttpAttempts` (one request when the server answers).
 * A `oneRequest` call sends one (a structured one may add up to two format probes).
 */
export function maxModelRequestsPerCall(
  maxHttpAttempts: number = DEFAULT_MAX_HTTP_ATTEMPTS,
  mode: ModelMode = "structured",
): number {
  return mode === "structured" ? 2 * maxHttpAttempts : maxHttpAttempts;
}

const RoleConfig = z.object({ model: z.string().min(1), temperature: z.number().min(0).max(2), tier: Tier });
const Options = z.object({
  baseURL: z.url(),
  apiKey: z.string().optional(),
  roles: z.record(z.string(), RoleConfig),
  defaultRole: RoleConfig,
  tiers: z.partialRecord(Tier, RoleConfig).default({}),
  timeoutMs: z.number().int().positive(),
  maxHttpAttempts: z.number().int().min(1).max(10).default(DEFAULT_MAX_HTTP_ATTEMPTS),
  prices: z
    .record(
      z.string(),
      z.object({ input_per_mtok: z.number().nonnegative(), output_per_mtok: z.number().nonnegative() }),
    )
    .default({}),
  structuredMode: z.enum(["auto", "json_schema", "json_object", "prompt"]).default("auto"),
});

type WireMode = Exclude<StructuredMode, "auto">;
const FALLBACK: Record<WireMode, WireMode | null> = { json_schema: "json_object", json_object: "prompt", prompt: null };
const MODE_ORDER: readonly WireMode[] = ["json_schema", "json_object", "prompt"];
/** What one request asks for: a structured-output format, or plain text. */
type Wire = WireMode | "text";

interface Tally {
  prompt: number;
  completion: number;
  calls: number;
  model: string;
  /** Characters already handed to `onToken` in text mode. */
  delivered: number;
}

/** How one exchange picks its wire format, and whether a rejected format may fall back within it. */
interface ExchangePlan {
  readonly wire: () => Wire;
  readonly fallback: boolean;
}

/** Header values must be visible ASCII; task ids are, but never let a stray byte fail a call. */
const headerValue = (s: string) => s.replace(/[^\x20-\x7e]/g, "_").slice(0, 200);

/** An adapter's settings, and the state its calls share. */
interface Adapter {
  readonly opts: Readonly<z.output<typeof Options>>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly backoff: BackoffPolicy;
  /** The SDK client, made by the first request (see loadOpenAI). */
  readonly client: () => Promise<OpenAI>;
  /** The structured-output mode that works for this endpoint; it only ever moves down the list. */
  mode: WireMode;
}

/**
 * The OpenAI-compatible adapter (OpenAI, Azure, vLLM, Ollama, llama.cpp, LM Studio, LiteLLM).
 * Our retries are the only ones: the client's own are off. See `maxModelRequestsPerCall`.
 */
export function createOpenAIModel(options: OpenAIModelOptions): ModelPort {
  const parsed = Options.safeParse(options);
  if (!parsed.success) throw new Error(`createOpenAIModel: invalid options:\n${formatZodError(parsed.error)}`);
  const opts = Object.freeze(parsed.data);
  const a: Adapter = {
    opts,
    sleep: options.sleep ?? realSleep,
    backoff: { ...DEFAULT_BACKOFF, ...options.backoff },
    client: lazyClient(opts),
    mode: opts.structuredMode === "auto" ? "json_schema" : opts.structuredMode,
  };

  function complete<T>(req: SchemaRequest<T>): Promise<ModelReply<T>>;
  function complete(req: TextRequest): Promise<ModelReply<string>>;
  async function complete(req: ModelRequest): Promise<ModelReply<unknown>> {
    const started = performance.now();
    if (req.signal?.aborted)
      throw new AgentmeshError("cancelled", "the model call was cancelled before it started", { retryable: false });
    const cfg =
      configFor(opts.roles, req.role, req.op) ??
      (req.tier === undefined ? undefined : opts.tiers[req.tier]) ??
      opts.defaultRole;
    const tally: Tally = { prompt: 0, completion: 0, calls: 0, model: cfg.model, delivered: 0 };
    const conversation: ChatCompletionMessageParam[] = [{ role: "user", content: req.prompt }];
    const reply = (output: unknown): ModelReply<unknown> => ({
      output,
      usage: usageOf(tally, cfg.model, opts.prices),
      model: tally.model,
      tier: cfg.tier,
      latencyMs: Math.round(performance.now() - started),
      temperature: req.temperature ?? cfg.temperature,
    });
    switch (req.mode) {
      case "text":
        return reply(await exchange(a, req, cfg, conversation, tally, { wire: () => "text", fallback: false }));
      case "json_object": {
        // json_object unless the endpoint is known to lack it; one exchange either way.
        const content = await exchange(a, req, cfg, conversation, tally, {
          wire: () => (a.mode === "prompt" ? "prompt" : "json_object"),
          fallback: false,
        });
        const parsed = parseReply(req.schema, content);
        if (!parsed.ok)
          throw new AgentmeshError(
            "model_invalid_output",
            `the model's output failed validation (json_object mode, not retried): ${parsed.problem}`.slice(0, 4000),
            { retryable: false },
          );
        return reply(parsed.value);
      }
      case undefined:
      case "structured":
        return reply(await structured(a, req, cfg, conversation, tally));
    }
  }

  return { name: `openai-compatible ${redactUrls(opts.baseURL)}`, complete };
}

/** The SDK client, made once by the first call of the returned function (see loadOpenAI). */
function lazyClient(opts: Adapter["opts"]): () => Promise<OpenAI> {
  let made: Promise<OpenAI> | null = null;
  return () =>
    (made ??= loadOpenAI().then(
      (sdk) =>
        new sdk.OpenAI({
          baseURL: opts.baseURL,
          // The client insists on a key (or reads OPENAI_API_KEY); local servers ignore it.
          apiKey: opts.apiKey ?? "not-needed",
          // Explicit values so the client never falls back to reading the environment.
          organization: null,
          project: null,
          webhookSecret: null,
          logLevel: "off",
          maxRetries: 0,
          // Our own timer (per attempt) fires first; this is only a backstop.
          timeout: opts.timeoutMs + 5_000,
        }),
    ));
}

/** Moves the adapter's mode to the one after `from`, unless it is already further down the list. */
function downgrade(a: Adapter, from: WireMode): void {
  const next = FALLBACK[from];
  if (next && MODE_ORDER.indexOf(next) > MODE_ORDER.indexOf(a.mode)) a.mode = next;
}

/** The request's parameters for one wire format. */
function body(
  req: ModelRequest,
  cfg: RoleModelConfig,
  wire: Wire,
  conversation: ChatCompletionMessageParam[],
): ChatCompletionCreateParamsBase {
  // Without json_schema support the schema travels in the system prompt.
  const system =
    req.mode === "text" || wire === "json_schema" ? req.system : `${req.system}\n\n${schemaInstruction(req.schema)}`;
  const base: ChatCompletionCreateParamsBase = {
    model: cfg.model,
    temperature: req.temperature ?? cfg.temperature,
    messages: [{ role: "system", content: system }, ...conversation],
  };
  if (req.mode === "text") return base;
  if (wire === "json_schema") {
    base.response_format = {
      type: "json_schema",
      json_schema: { name: schemaNameFor(req.schemaName), strict: true, schema: toStrictJsonSchema(req.schema) },
    };
  } else if (wire === "json_object") {
    base.response_format = { type: "json_object" };
  }
  return base;
}

/** One HTTP request; resolves with the assistant's text. */
async function send(
  a: Adapter,
  req: ModelRequest,
  params: ChatCompletionCreateParamsBase,
  tally: Tally,
): Promise<string> {
  const { opts } = a;
  // loaded before the timer starts: the timeout is the endpoint's, not the first import's
  const sdk = await a.client();
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort();
  }, opts.timeoutMs);
  const onAbort = () => ctrl.abort();
  req.signal?.addEventListener("abort", onAbort, { once: true });
  const requestOptions = {
    signal: ctrl.signal,
    maxRetries: 0,
    headers: {
      "x-agentmesh-role": headerValue(req.role),
      "x-agentmesh-op": headerValue(req.op),
      "x-agentmesh-task-id": headerValue(req.taskId),
    },
  };
  try {
    if (req.onToken || req.mode === "text") {
      const text = req.mode === "text";
      const stream = await sdk.chat.completions.create(
        { ...params, stream: true, stream_options: { include_usage: true } },
        requestOptions,
      );
      let content = "";
      for await (const chunk of stream) {
        if (chunk.model) tally.model = chunk.model;
        // Servers that ignore `include_usage` send none; the call then reports 0 tokens.
        if (chunk.usage) {
          tally.prompt += chunk.usage.prompt_tokens;
          tally.completion += chunk.usage.completion_tokens;
        }
        const delta = chunk.choices[0]?.delta;
        if (delta?.content) {
          content += delta.content;
          if (req.onToken) forwardDelta(req.onToken, delta.content);
          if (text) tally.delivered += delta.content.length;
        }
      }
      // The client's stream ends quietly when aborted; a partial reply must not pass as whole.
      if (ctrl.signal.aborted) throw new Error("the stream was aborted");
      tally.calls += 1;
      return content;
    }
    const completion = await sdk.chat.completions.create({ ...params, stream: false }, requestOptions);
    tally.calls += 1;
    if (completion.model) tally.model = completion.model;
    tally.prompt += completion.usage?.prompt_tokens ?? 0;
    tally.completion += completion.usage?.completion_tokens ?? 0;
    const message = completion.choices[0]?.message;
    if (message?.refusal)
      throw new AgentmeshError("model_refused", `the model refused: ${message.refusal.slice(0, 1000)}`, {
        retryable: false,
      });
    return message?.content ?? "";
  } catch (err) {
    if (req.signal?.aborted)
      throw new AgentmeshError("cancelled", "the model call was cancelled", { retryable: false });
    if (timedOut)
      throw new AgentmeshError("timeout", `the model endpoint did not answer within ${opts.timeoutMs} ms`, {
        retryable: true,
      });
    throw err;
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener("abort", onAbort);
  }
}

/** One exchange: up to maxHttpAttempts requests (retries and format fallbacks) for one reply. */
async function exchange(
  a: Adapter,
  req: ModelRequest,
  cfg: RoleModelConfig,
  conversation: ChatCompletionMessageParam[],
  tally: Tally,
  plan: ExchangePlan,
): Promise<string> {
  const { opts, backoff } = a;
  let last: AgentmeshError | undefined;
  // a one-request call gets one try at a reply; a format the endpoint rejected (the probe) is not a try
  const limit = req.oneRequest === true ? 1 : opts.maxHttpAttempts;
  let probes = 0;
  for (let attempt = 1; attempt <= limit; attempt++) {
    const wire = plan.wire();
    try {
      return await send(a, req, body(req, cfg, wire, conversation), tally);
    } catch (err) {
      const failure = classifyAttemptError(err, wire === "json_schema" || wire === "json_object", await loadOpenAI());
      if (failure.kind === "fail") throw failure.error;
      if (failure.kind === "fallback") {
        if (opts.structuredMode !== "auto" || wire === "text" || FALLBACK[wire] === null) throw failure.error;
        downgrade(a, wire);
        // A json_object call is one request: it fails, and later calls start in the mode that works.
        if (!plan.fallback)
          throw new AgentmeshError(failure.error.code, `${failure.error.message}; later calls send ${a.mode}`, {
            retryable: false,
          });
        // Retryable: the next call starts in the mode that works.
        last = new AgentmeshError("model_error", `${failure.error.message}; switched to ${a.mode} for later calls`, {
          retryable: true,
        });
        if (req.oneRequest === true && probes < MODE_ORDER.length - 1) {
          probes++;
          attempt--;
        }
        continue;
      }
      last = failure.error;
      // Deltas already handed to onToken cannot be taken back: a broken text stream is not repeated here.
      if (attempt === limit || tally.delivered > 0) break;
      const delay = backoffDelay(attempt, failure.retryAfterMs, backoff);
      if (delay === null)
        throw new AgentmeshError(
          failure.error.code,
          `${failure.error.message} (asked to wait longer than ${backoff.maxRetryAfterMs} ms)`,
          { retryable: true },
        );
      await sleepUnlessAborted(delay, a.sleep, req.signal);
    }
  }
  throw last ?? new AgentmeshError("internal", "no HTTP attempt was made", { retryable: false });
}

/** Structured: the best format the endpoint supports, validated, with one validation retry. */
async function structured<T>(
  a: Adapter,
  req: StructuredRequest<T>,
  cfg: RoleModelConfig,
  conversation: ChatCompletionMessageParam[],
  tally: Tally,
): Promise<T> {
  let problem = "";
  const rounds = req.oneRequest === true ? 1 : 2;
  for (let round = 1; round <= rounds; round++) {
    const content = await exchange(a, req, cfg, conversation, tally, { wire: () => a.mode, fallback: true });
    const reply = parseReply(req.schema, content);
    if (reply.ok) return reply.value;
    problem = reply.problem;
    if (round === rounds) break;
    // The one validation retry: show the model its reply and what was wrong with it.
    conversation.push(
      { role: "assistant", content: content.slice(0, 20_000) },
      {
        role: "user",
        content: `Your reply could not be used. ${problem}\nReply again with only the corrected JSON object.`,
      },
    );
  }
  throw new AgentmeshError(
    "model_invalid_output",
    `the model's output failed validation${rounds === 2 ? " twice" : ""}: ${problem}`.slice(0, 4000),
    { retryable: rounds === 2 },
  );
}

/** The settings of `<role>.<op>`, else of `<role>`, else undefined. */
function configFor(
  roles: Readonly<Record<string, RoleModelConfig>>,
  role: string,
  op: string,
): RoleModelConfig | undefined {
  for (const key of [`${role}.${op}`, role]) if (Object.hasOwn(roles, key)) return roles[key];
  return undefined;
}

function usageOf(tally: Tally, configured: string, prices: Readonly<Record<string, ModelPrice>>): Usage {
  // Price by the configured name first: servers often answer with a dated variant of it.
  const price =
    (Object.hasOwn(prices, configured) ? prices[configured] : undefined) ??
    (Object.hasOwn(prices, tally.model) ? prices[tally.model] : undefined);
  const cost = price ? (tally.prompt * price.input_per_mtok + tally.completion * price.output_per_mtok) / 1_000_000 : 0;
  return { prompt_tokens: tally.prompt, completion_tokens: tally.completion, cost_usd: cost, model_calls: tally.calls };
}
