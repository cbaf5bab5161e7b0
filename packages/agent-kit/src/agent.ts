import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import { findOp, wireError, type Naming, type TaskEnvelope, type TaskOutcome, type WireError } from "@agentmesh/contracts";
import { AgentmeshError, createMicroService, startWorker, type CrashHook, type TaskContext, type Worker } from "@agentmesh/messaging";
import { isModelError, type ModelPort } from "@agentmesh/llm";
import type { Logger, Stoppable } from "@agentmesh/service-kit";
import type { AgentDefinition, OpPrompt } from "./definition.js";

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
}

/** A running agent role: its JetStream worker and its `$SRV` registration. */
export interface RunningAgent extends Stoppable {
  readonly worker: Worker;
}

type AnyPrompt = OpPrompt<unknown, unknown>;

/** Runs one op of a role against the model: validate, call, validate, report with provenance. */
export function createOpRunner(def: AgentDefinition, model: ModelPort, opts: { log: Logger; logPayloads?: boolean; crash?: CrashHook }) {
  const fail = (error: WireError): TaskOutcome => ({ ok: false, error, provenance: null });
  return async function runOp(task: Pick<TaskEnvelope, "task_id" | "role" | "op" | "attempt" | "input">, signal: AbortSignal): Promise<TaskOutcome> {
    const spec = findOp(task.role, task.op);
    const prompt = (def.ops as Record<string, AnyPrompt | undefined>)[task.op];
    if (task.role !== def.role || !spec || !prompt) return fail(wireError("unknown_op", `${def.role} has no op ${task.role}.${task.op}`, def.role));
    const parsed = spec.request.safeParse(task.input);
    if (!parsed.success) {
      return fail(wireError("invalid_message", `task input for ${task.role}.${task.op} failed its schema: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`, def.role));
    }
    const log = opts.log.child({ taskId: task.task_id, op: task.op });
    const rendered = prompt.render(parsed.data);
    if (opts.logPayloads) log.debug({ system: prompt.system, prompt: rendered }, "model request");
    try {
      const reply = await model.complete({
        role: task.role,
        op: task.op,
        taskId: task.task_id,
        system: prompt.system,
        prompt: rendered,
        input: parsed.data,
        schema: spec.response,
        schemaName: `${task.role}_${task.op}`,
        signal,
      });
      opts.crash?.("after-model");
      log.info({ model: reply.model, latencyMs: Math.round(reply.latencyMs), summary: prompt.summarize(reply.output) }, "op done");
      return {
        ok: true,
        output: reply.output,
        provenance: {
          role: task.role,
          op: task.op,
          model: reply.model,
          tier: reply.tier,
          prompt_version: prompt.promptVersion,
          attempt: task.attempt,
          usage: reply.usage,
          latency_ms: Math.round(reply.latencyMs * 1000) / 1000,
        },
      };
    } catch (err) {
      if (isModelError(err)) {
        log.warn({ code: err.code, retryable: err.retryable, msg: err.message }, "model call failed");
        return fail({ code: err.code, message: err.message, retryable: err.retryable, component: def.role });
      }
      log.error({ err }, "op crashed");
      return fail(wireError("internal", `bug in ${def.role}.${task.op}: ${(err as Error)?.message ?? String(err)}`, def.role));
    }
  };
}

/**
 * Starts an agent role: a durable pull consumer on its task subjects and a `$SRV` micro service
 * (stats carry the JetStream work counts; each op is also callable directly for debugging).
 */
export async function startAgent(def: AgentDefinition, opts: AgentOptions): Promise<RunningAgent> {
  const log = opts.log.child({ role: def.role });
  const runOp = createOpRunner(def, opts.model, { log, logPayloads: opts.logPayloads, crash: opts.crash });
  const worker = await startWorker(opts.nc, {
    naming: opts.naming,
    role: def.role,
    concurrency: opts.concurrency,
    ackWaitMs: opts.ackWaitMs,
    maxDeliver: opts.maxDeliver,
    log,
    crash: opts.crash,
    handler: (task: TaskEnvelope, ctx: TaskContext) => runOp(task, ctx.signal),
  });
  const micro = await createMicroService(opts.nc, {
    name: def.role,
    version: opts.version ?? "0.1.0",
    description: def.description,
    metadata: { prefix: opts.naming.prefix, kind: "agent", model: opts.model.name, host: hostname() },
    statsData: () => ({ ...worker.stats, alive: worker.alive() }),
  });
  for (const op of Object.keys(def.ops)) {
    await micro.addEndpoint(op, opts.naming.rpc(def.role, op), async (data: unknown) => {
      const body = (data ?? {}) as { input?: unknown; task_id?: string };
      const outcome = await runOp(
        { task_id: body.task_id ?? "direct0000.0.0.0", role: def.role, op, attempt: 0, input: body.input ?? data },
        AbortSignal.timeout(opts.ackWaitMs),
      );
      if (!outcome.ok) throw new AgentmeshError(outcome.error.code, outcome.error.message, { retryable: outcome.error.retryable, component: def.role });
      return outcome;
    });
  }
  return {
    worker,
    async stop(graceMs: number) {
      await worker.stop(graceMs);
      await micro.stop();
    },
  };
}
