import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import {
  AgentmeshError,
  ZERO_USAGE,
  compiled,
  findOp,
  formatZodError,
  parseTaskId,
  type Naming,
  type Provenance,
  type RoleName,
  type TaskEnvelope,
  type TaskOutcome,
  type Tier,
  type Usage,
  type WireError,
} from "@agentmesh/contracts";
import {
  consumerLagReader,
  createMicroService,
  createPublisher,
  startWorker,
  type CrashHook,
  type TaskContext,
  type TaskHandler,
  type Worker,
} from "@agentmesh/messaging";
import type { ModelPort, ModelReply } from "@agentmesh/llm";
import {
  lazyChild,
  TRACING_OFF,
  type Logger,
  type Metrics,
  type SpanAttributeMap,
  type SpanHandle,
  type Stoppable,
  type Tracing,
} from "@agentmesh/service-kit";
import {
  isHandler,
  isTextPrompt,
  type AgentDefinition,
  type HandlerContext,
  type HandlerModelCall,
  type HandlerTextCall,
  type OpSpec,
} from "./definition.js";
import { cutModelText, keptOnly, proseOnly, tokenStreamer, type TokenSink, type TokenStream } from "./tokens.js";
import type { PromptContract } from "./prompts.js";
import { FILE_PROMPTS, compileTemplate, type PromptSource, type ResolvedPrompt } from "./prompt-source.js";
import { roleMetrics } from "./metrics.js";

export interface AgentOptions {
  readonly nc: NatsConnection;
  readonly naming: Naming;
  readonly model: ModelPort;
  readonly log: Logger;
  readonly concurrency: number;
  readonly ackWaitMs: number;
  readonly maxDeliver: number;
  readonly crash?: CrashHook;
  readonly logPayloads?: boolean;
  readonly version?: string;
  /**
   * Also serve each op as a direct request/reply endpoint `<p>.rpc.<role>.<op>` (debugging with
   * `nats req`): off by default, since a direct call runs with any session id it is given.
   */
  readonly rpc?: boolean;
  /** Prompt contracts by id (loaded at start-up); every contract the role's ops name must be here. */
  readonly prompts?: ReadonlyMap<string, PromptContract>;
  /** Where instructions come from first (Langfuse), the prompt files being the fallback; default the files only. */
  readonly promptSource?: PromptSource;
  /** Where task and model-call spans go (default off). */
  readonly tracing?: Tracing;
  /** The process's metrics registry; without one the role keeps no metrics. */
  readonly metrics?: Metrics;
}

/** A running agent role: its JetStream worker and its `$SRV` registration. */
export interface RunningAgent extends Stoppable {
  readonly role: RoleName;
  readonly worker: Worker;
}

/** Options of an op runner. */
export interface OpRunnerOptions {
  readonly log: Logger;
  readonly logPayloads?: boolean;
  readonly crash?: CrashHook;
  readonly prompts?: ReadonlyMap<string, PromptContract>;
  /** Where streaming ops' token messages go; without one, nothing streams. */
  readonly tokens?: TokenSink;
  /** Where instructions come from first (Langfuse), the prompt files being the fallback; default the files only. */
  readonly promptSource?: PromptSource;
  /** Where task and model-call spans go (default off). */
  readonly tracing?: Tracing;
}

/** Where a task's spans hang: the traceparent and thread its message carried. */
export interface TaskTrace {
  readonly traceparent?: string | undefined;
  readonly threadId?: string | undefined;
}

/** `gen_ai.system` of a model port: the provider family its name starts with (`openai`, `offline`, `scripted`). */
export const genAiSystem = (portName: string): string =>
  portName.startsWith("openai") ? "openai" : (portName.split(/[\s-]/)[0] ?? portName);

/** The task fields an op runs from (a direct `nats req` call has no session of its own). */
export type OpTask = Pick<TaskEnvelope, "task_id" | "role" | "op" | "attempt" | "input"> & {
  readonly session_id?: string;
  readonly allowance?: TaskEnvelope["allowance"];
};

type AnyOp = OpSpec<unknown, unknown>;
const round3 = (ms: number) => Math.round(ms * 1000) / 1000;
const addUsage = (a: Usage, b: Usage): Usage => ({
  prompt_tokens: a.prompt_tokens + b.prompt_tokens,
  completion_tokens: a.completion_tokens + b.completion_tokens,
  cost_usd: a.cost_usd + b.cost_usd,
  model_calls: a.model_calls + b.model_calls,
});

/** The contract an op names, or null; a missing one is a start-up error (see `checkContracts`). */
function contractOf(op: AnyOp, prompts: ReadonlyMap<string, PromptContract> | undefined): PromptContract | null {
  if (!op.contract) return null;
  const c = prompts?.get(op.contract);
  if (!c) throw new Error(`prompt contract ${op.contract} is not loaded`);
  return c;
}

/** Throws when an op names a prompt contract that was not loaded: found at start-up, not on the first task. */
export function checkContracts(def: AgentDefinition, prompts: ReadonlyMap<string, PromptContract> | undefined): void {
  const missing = Object.values(def.ops as Record<string, AnyOp>).flatMap((op) =>
    op.contract && !prompts?.has(op.contract) ? [op.contract] : [],
  );
  if (missing.length)
    throw new Error(
      `${def.role}: prompt contract(s) not found: ${missing.join(", ")} (expected prompts/<id>.v<N>.json)`,
    );
}

/** A prompt op's system text: the resolved instructions, then the op's own. */
function systemOf(resolved: ResolvedPrompt | null, own: string | undefined): string {
  return [resolved?.text, own].filter((s): s is string => typeof s === "string" && s.length > 0).join("\n\n");
}

/** The name an op's prompt goes by in a prompt registry (Langfuse): its own `promptName`, else its prompt file id. */
const promptNameOf = (op: AnyOp, contract: PromptContract): string =>
  isHandler(op) ? contract.id : (op.promptName ?? contract.id);

/** The op's instructions: from the prompt source by the op's prompt name (Langfuse, else the file), placeholders filled. */
async function instructionsOf(
  op: AnyOp,
  contract: PromptContract | null,
  source: PromptSource,
  input: unknown,
): Promise<ResolvedPrompt | null> {
  if (!contract) return null;
  const resolved = await source.resolve(promptNameOf(op, contract), contract);
  const vars = !isHandler(op) && op.variables ? op.variables(input) : null;
  return vars ? { ...resolved, text: compileTemplate(resolved.text, vars) } : resolved;
}

/** What one run of a task works with: the op and its checked input, where it logs, and what its model calls have cost. */
interface TaskRun {
  readonly def: AgentDefinition;
  readonly model: ModelPort;
  readonly opts: OpRunnerOptions;
  readonly tracing: Tracing;
  readonly task: OpTask;
  readonly op: AnyOp;
  readonly response: z.ZodType;
  readonly input: unknown;
  readonly signal: AbortSignal;
  readonly taskSpan: SpanHandle;
  readonly common: SpanAttributeMap;
  readonly log: Logger;
  readonly sessionId: string;
  readonly tokens: TokenStream | undefined;
  /** Summed over the task's model calls; the model and tier are the last call's. */
  spent: { usage: Usage; model: string; tier: Tier };
}

/** The two kinds of model call a task makes: structured (a schema) and text. */
interface ModelCalls {
  readonly call: <T>(c: HandlerModelCall<T>) => Promise<T>;
  readonly callText: (c: HandlerTextCall) => Promise<string>;
}

/** An op's output, already checked against its response schema, and the prompt version it came from. */
type OpProduct = { readonly output: unknown; readonly promptVersion: string } | { readonly failed: TaskOutcome };

const failed = (error: WireError): TaskOutcome => ({ ok: false, error, provenance: null });

/**
 * Runs one op of a role: validate the input, run the prompt through the model or the handler,
 * validate the output against the contracts' response schema, report with provenance.
 */
export function createOpRunner(def: AgentDefinition, model: ModelPort, opts: OpRunnerOptions) {
  const tracing = opts.tracing ?? TRACING_OFF;
  /**
   * One task's span (a child of the coordinator's transition span named in its message), its
   * outcome recorded on it; with tracing off no span is built.
   */
  return async function runOp(task: OpTask, signal: AbortSignal, where: TaskTrace = {}): Promise<TaskOutcome> {
    if (!tracing.enabled) return runTask(def, model, opts, task, signal, TRACING_OFF.start("task"), {});
    const common: SpanAttributeMap = {
      "agentmesh.session_id": task.session_id ?? parseTaskId(task.task_id)?.sessionId,
      "langfuse.session.id": where.threadId,
    };
    const span = tracing.start("task", {
      parent: where.traceparent,
      kind: "consumer",
      attributes: {
        ...common,
        "agentmesh.role": task.role,
        "agentmesh.op": task.op,
        "agentmesh.task_id": task.task_id,
        "agentmesh.attempt": task.attempt,
      },
    });
    try {
      const outcome = await runTask(def, model, opts, task, signal, span, common);
      recordOutcome(span, outcome);
      return outcome;
    } finally {
      span.end();
    }
  };
}

/** A task span's closing attributes: the provenance of a success, the code of a failure. */
function recordOutcome(span: SpanHandle, outcome: TaskOutcome): void {
  if (outcome.ok) {
    const p = outcome.provenance;
    span.setAttributes({
      "agentmesh.ok": true,
      "agentmesh.model": p?.model,
      "agentmesh.prompt_version": p?.prompt_version,
      "agentmesh.model_calls": p?.usage.model_calls,
      "gen_ai.usage.input_tokens": p?.usage.prompt_tokens,
      "gen_ai.usage.output_tokens": p?.usage.completion_tokens,
      "agentmesh.cost_usd": p?.usage.cost_usd,
    });
    return;
  }
  span.setAttributes({
    "agentmesh.ok": false,
    "agentmesh.error_code": outcome.error.code,
    "agentmesh.retryable": outcome.error.retryable,
  });
  span.fail(new Error(`${outcome.error.code}: ${outcome.error.message}`));
}

/** The op a task names and its input checked against the op's request schema, or the failure that says why not. */
function resolveTask(
  def: AgentDefinition,
  task: OpTask,
): { readonly op: AnyOp; readonly response: z.ZodType; readonly input: unknown } | { readonly failed: TaskOutcome } {
  const spec = findOp(task.role, task.op);
  const op = Object.hasOwn(def.ops, task.op) ? (def.ops as Record<string, AnyOp | undefined>)[task.op] : undefined;
  if (task.role !== def.role || !spec || !op)
    return {
      failed: failed(
        new AgentmeshError("unknown_op", `${def.role} has no op ${task.role}.${task.op}`).toWire(def.role),
      ),
    };
  const parsed = compiled<z.ZodType>(spec.request).safeParse(task.input);
  if (!parsed.success) {
    const why = `task input for ${task.role}.${task.op} failed its schema: ${formatZodError(parsed.error)}`;
    return { failed: failed(new AgentmeshError("invalid_message", why).toWire(def.role)) };
  }
  return { op, response: spec.response, input: parsed.data };
}

async function runTask(
  def: AgentDefinition,
  model: ModelPort,
  opts: OpRunnerOptions,
  task: OpTask,
  signal: AbortSignal,
  taskSpan: SpanHandle,
  common: SpanAttributeMap,
): Promise<TaskOutcome> {
  const resolved = resolveTask(def, task);
  if ("failed" in resolved) return resolved.failed;
  // made only if the task writes a line at an enabled level
  const log = lazyChild(opts.log, { task_id: task.task_id, op: task.op });
  const started = performance.now();
  const sessionId = task.session_id ?? parseTaskId(task.task_id)?.sessionId ?? "";
  const run: TaskRun = {
    ...resolved,
    def,
    model,
    opts,
    tracing: opts.tracing ?? TRACING_OFF,
    task,
    signal,
    taskSpan,
    common,
    log,
    sessionId,
    // one numbering per run of the task, across all of its streamed model calls
    tokens: opts.tokens ? tokenStreamer({ ...task, session_id: sessionId }, opts.tokens, log) : undefined,
    spent: { usage: ZERO_USAGE, model: "none", tier: "fast" },
  };
  try {
    const contract = contractOf(run.op, opts.prompts);
    const instructions = await instructionsOf(run.op, contract, opts.promptSource ?? FILE_PROMPTS, run.input);
    const calls = modelCalls(run, instructions);
    const product = await produce(run, contract, instructions, calls);
    if ("failed" in product) return product.failed;
    return succeeded(run, contract, product, started);
  } catch (err) {
    return failureOf(run, err);
  } finally {
    // the run's tokens are stored before its result is published
    await run.tokens?.flush();
  }
}

/** Runs the op by its kind: a handler with its context, a text prompt, or a structured prompt. */
async function produce(
  run: TaskRun,
  contract: PromptContract | null,
  instructions: ResolvedPrompt | null,
  { call, callText }: ModelCalls,
): Promise<OpProduct> {
  const { op, task, def, response, input } = run;
  if (isHandler(op)) {
    const raw = await op.run(input, handlerContext(run, contract, call, callText));
    const checked = compiled(response).safeParse(raw);
    if (!checked.success) {
      const why = `bug in ${def.role}.${task.op}: its output failed the response schema: ${formatZodError(checked.error)}`;
      return { failed: failed(new AgentmeshError("internal", why).toWire(def.role)) };
    }
    return { output: checked.data, promptVersion: instructions?.version ?? op.version };
  }
  if (isTextPrompt(op)) {
    const text = await callText({
      system: systemOf(instructions, op.system),
      prompt: op.render(input),
      stream: op.stream === true,
      streamOnlyProse: op.streamOnlyProse === true,
      ...(op.temperature === undefined ? {} : { temperature: op.temperature }),
    });
    const checked = compiled(response).safeParse(op.toOutput(text, input));
    if (!checked.success) {
      throw new AgentmeshError(
        "model_invalid_output",
        `${def.role}.${task.op}: the model's text does not make a valid response: ${formatZodError(checked.error)}`,
      );
    }
    return { output: checked.data, promptVersion: instructions?.version ?? "unversioned" };
  }
  const output = await call({
    system: systemOf(instructions, op.system),
    prompt: op.render(input),
    schema: response,
    schemaName: `${task.role}_${task.op}`,
    ...(op.temperature === undefined ? {} : { temperature: op.temperature }),
  });
  return { output, promptVersion: instructions?.version ?? "unversioned" };
}

/** What a handler op gets: the task's identity and allowance, its log, its prompt, model calls and spans. */
function handlerContext(
  run: TaskRun,
  contract: PromptContract | null,
  call: ModelCalls["call"],
  callText: ModelCalls["callText"],
): HandlerContext {
  const { task, tracing, taskSpan, common } = run;
  return {
    taskId: task.task_id,
    sessionId: run.sessionId,
    attempt: task.attempt,
    ...(task.allowance === undefined ? {} : { allowance: task.allowance }),
    signal: run.signal,
    log: run.log,
    prompt: contract,
    complete: call,
    completeText: callText,
    tracing: tracing.enabled,
    annotate: (attributes) => taskSpan.setAttributes(attributes),
    span: (name, attributes, fn, parent) =>
      tracing.run(name, { parent: (parent ?? taskSpan).traceparent, attributes: { ...common, ...attributes } }, fn),
  };
}

/** The task's model calls: each carries the task's identity, runs in its own span and adds to the task's spend. */
function modelCalls(run: TaskRun, instructions: ResolvedPrompt | null): ModelCalls {
  const { task, op, opts, log, model } = run;
  /** What every model call of this task carries, whatever its mode. */
  const base = (c: Pick<HandlerTextCall, "system" | "prompt" | "temperature" | "tier">) => {
    if (opts.logPayloads) log.debug({ system: c.system, prompt: c.prompt }, "model request");
    return {
      role: task.role,
      op: task.op,
      taskId: task.task_id,
      system: c.system ?? systemOf(instructions, undefined),
      prompt: c.prompt,
      input: run.input,
      ...(c.temperature === undefined ? {} : { temperature: c.temperature }),
      ...(c.tier === undefined ? {} : { tier: c.tier }),
      ...(op.oneCall === true ? { oneRequest: true } : {}),
      signal: run.signal,
    };
  };
  const account = (reply: { usage: Usage; model: string; tier: Tier }) => {
    run.spent = { usage: addUsage(run.spent.usage, reply.usage), model: reply.model, tier: reply.tier };
  };
  const onToken = run.tokens?.onToken;
  return {
    call: async <T>(c: HandlerModelCall<T>): Promise<T> => {
      const reply = await tracedModelCall(run, c.temperature, () =>
        model.complete({ ...base(c), schema: c.schema, schemaName: c.schemaName, mode: c.mode ?? "structured" }),
      );
      account(reply);
      return reply.output;
    },
    callText: async (c: HandlerTextCall): Promise<string> => {
      const reply = await tracedModelCall(run, c.temperature, () =>
        model.complete({
          ...base(c),
          mode: "text",
          ...(c.stream === true && onToken
            ? { onToken: keptOnly(c.streamOnlyProse === true ? proseOnly(onToken) : onToken) }
            : {}),
        }),
      );
      account(reply);
      return cutModelText(reply.output);
    },
  };
}

/** A model call in its own span, with the GenAI attributes of its request and reply. */
function tracedModelCall<R extends ModelReply<unknown>>(
  run: TaskRun,
  temperature: number | undefined,
  fn: () => Promise<R>,
): Promise<R> {
  const { tracing, task } = run;
  if (!tracing.enabled) return fn();
  const attributes = {
    ...run.common,
    "gen_ai.operation.name": "chat",
    "gen_ai.system": genAiSystem(run.model.name),
    "gen_ai.request.temperature": temperature,
    "agentmesh.role": task.role,
    "agentmesh.op": task.op,
    "agentmesh.task_id": task.task_id,
    "langfuse.observation.type": "generation",
  };
  return tracing.run("model_call", { parent: run.taskSpan.traceparent, kind: "client", attributes }, async (span) => {
    const reply = await fn();
    span.setAttributes({
      "gen_ai.request.model": reply.model,
      "gen_ai.response.model": reply.model,
      "gen_ai.request.temperature": reply.temperature ?? temperature,
      "gen_ai.usage.input_tokens": reply.usage.prompt_tokens,
      "gen_ai.usage.output_tokens": reply.usage.completion_tokens,
      "agentmesh.cost_usd": reply.usage.cost_usd,
      "agentmesh.tier": reply.tier,
      "agentmesh.model_requests": reply.usage.model_calls,
    });
    return reply;
  });
}

/** A finished op: its decision record on the span, the crash point after the model, one log line, its provenance. */
function succeeded(
  run: TaskRun,
  contract: PromptContract | null,
  { output, promptVersion }: { readonly output: unknown; readonly promptVersion: string },
  started: number,
): TaskOutcome {
  const { op, task, spent, log } = run;
  if (run.tracing.enabled && op.spanAttributes) {
    const promptName = contract ? promptNameOf(op, contract) : task.op;
    run.taskSpan.setAttributes(op.spanAttributes(run.input, output, { model: spent.model, promptName, promptVersion }));
  }
  run.opts.crash?.("after-model");
  const latencyMs = performance.now() - started;
  if (log.isLevelEnabled("info"))
    log.info({ model: spent.model, latency_ms: Math.round(latencyMs), summary: op.summarize(output) }, "op done");
  const provenance: Provenance = {
    role: task.role,
    op: task.op,
    model: spent.model,
    tier: spent.tier,
    prompt_version: promptVersion.slice(0, 40),
    attempt: task.attempt,
    usage: spent.usage,
    latency_ms: round3(latencyMs),
  };
  return { ok: true, output, provenance };
}

/** A thrown error as the task's failure: a typed error (ours, the model port's, a tool's) keeps its code and retryability; anything else is a bug. */
function failureOf(run: TaskRun, err: unknown): TaskOutcome {
  const { def, task, op, log } = run;
  const error = AgentmeshError.from(err, `bug in ${def.role}.${task.op}`);
  if (err instanceof AgentmeshError)
    log.warn({ code: error.code, retryable: error.retryable, msg: error.message }, "op failed");
  else log.error({ err }, "op crashed");
  // a one-call op's workflow falls back on any failure: a redelivery would only call again
  return failed(op.oneCall === true ? { ...error.toWire(def.role), retryable: false } : error.toWire(def.role));
}

/**
 * Starts an agent role: a durable pull consumer on its task subjects and a `$SRV` micro service
 * (stats carry the JetStream work counts; each op is also callable directly for debugging).
 */
export async function startAgent(def: AgentDefinition, opts: AgentOptions): Promise<RunningAgent> {
  checkContracts(def, opts.prompts);
  const log = opts.log.child({ role: def.role });
  const publisher = createPublisher(opts.nc, opts.naming, log);
  const metrics = opts.metrics
    ? roleMetrics(opts.metrics, { role: def.role, naming: opts.naming, lag: consumerLagReader(opts.nc), log })
    : null;
  const runOp = createOpRunner(def, metrics ? metrics.metered(opts.model) : opts.model, {
    log,
    logPayloads: opts.logPayloads,
    crash: opts.crash,
    prompts: opts.prompts,
    ...(opts.promptSource ? { promptSource: opts.promptSource } : {}),
    tokens: (t) => publisher.publishTokens(t),
    ...(opts.tracing ? { tracing: opts.tracing } : {}),
  });
  const work: TaskHandler = (task: TaskEnvelope, ctx: TaskContext) =>
    runOp(task, ctx.signal, { traceparent: ctx.traceparent, threadId: ctx.threadId });
  const worker = await startWorker(opts.nc, {
    naming: opts.naming,
    role: def.role,
    concurrency: opts.concurrency,
    ackWaitMs: opts.ackWaitMs,
    maxDeliver: opts.maxDeliver,
    log,
    crash: opts.crash,
    handler: metrics ? metrics.timed(work) : work,
    ...(metrics ? { onSettled: metrics.onSettled } : {}),
  });
  const unwatch = metrics?.watch(worker);
  const workCounts = () => ({ ...worker.stats, alive: worker.alive() });
  const micro = await createMicroService(opts.nc, {
    name: def.role,
    version: opts.version ?? "0.1.0",
    description: def.description,
    metadata: { prefix: opts.naming.prefix, kind: "agent", model: opts.model.name, host: hostname() },
    statsData: workCounts,
  });
  if (!opts.rpc) {
    // Without direct op calls a service would list no endpoint, and ADR-32 carries work counts
    // only per endpoint: one read-only `status` endpoint answers them (no session is touched).
    await micro.addEndpoint("status", opts.naming.rpc(def.role, "status"), async () => workCounts());
  }
  for (const op of opts.rpc ? Object.keys(def.ops) : []) {
    await micro.addEndpoint(op, opts.naming.rpc(def.role, op), async (data: unknown) => {
      const body = (data ?? {}) as { input?: unknown; task_id?: string; session_id?: string };
      const outcome = await runOp(
        {
          task_id: body.task_id ?? "direct0000.0.0.0",
          session_id: body.session_id ?? "direct0000",
          role: def.role,
          op,
          attempt: 0,
          input: body.input ?? data,
        },
        AbortSignal.timeout(opts.ackWaitMs),
      );
      if (!outcome.ok) throw AgentmeshError.fromWire(outcome.error);
      return outcome;
    });
  }
  // the server has the `$SRV` and op subscriptions once this returns: ready means answering
  await opts.nc.flush();
  return {
    role: def.role,
    worker,
    async stop(graceMs: number) {
      await worker.stop(graceMs);
      unwatch?.();
      await micro.stop();
    },
  };
}
