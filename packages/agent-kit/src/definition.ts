import type { OpName, OpRequest, OpResponse, RoleName, Tier } from "@agentmesh/contracts";
import type { SchemaRequest } from "@agentmesh/llm";
import type { Logger, SpanAttributeMap, SpanHandle } from "@agentmesh/service-kit";
import type { PromptContract } from "./prompts.js";

/** What an op's offline behaviour gets besides its validated input. */
export interface OfflineContext {
  /** How to configure a real model, for answers that say one is needed. */
  readonly configHint: string;
  readonly signal: AbortSignal | undefined;
}

/**
 * An op's offline behaviour: the deterministic answer the offline engine gives when no model
 * endpoint is configured, typed by the op's own schemas. An op without one answers `needs_model`.
 */
export type OfflineBehaviour<Req, Res> = (input: Req, ctx: OfflineContext) => Res | Promise<Res>;

/** What every prompt op has: its prompt file, prompt rendering and one-line summary. */
interface PromptOpBase<Req, Res> {
  readonly kind?: "prompt";
  /**
   * Id of the op's prompt file (`<role>.<op>.v<N>.json` in the role's folder, overridable by
   * configuration). Its instructions are the system prompt; `<id>/v<N>` is the recorded prompt version.
   */
  readonly contract: string;
  /** Op-specific instructions after the prompt file's (e.g. output rules). */
  readonly system?: string;
  /**
   * The prompt's name in Langfuse when one is configured (default: `contract`); its text there
   * replaces the prompt file's instructions, which stay the fallback.
   */
  readonly promptName?: string;
  /**
   * An op whose workflow falls back at once when its model call fails (halo's capability planner,
   * the supervisor's router, clarify's orchestrator): each delivery sends one model request (no
   * retry of a 429, a 5xx, a timeout or invalid output), and any failure is reported at once as not
   * retryable, so the task is not redelivered.
   */
  readonly oneCall?: boolean;
  /** The op's own temperature, over the role's configured one (clarify's orchestrator: 0.3). */
  readonly temperature?: number;
  /** Values of the `{{name}}` placeholders in the instructions (the prompt file's or Langfuse's). */
  variables?(input: Req): Readonly<Record<string, string | number>>;
  render(input: Req): string;
  summarize(output: Res): string;
  /** Attributes for the task's span from a successful output (a decision record); called only when tracing is on. */
  spanAttributes?(input: Req, output: Res, made: SpanMade): SpanAttributeMap;
}

/** How an output was made, for an op's span attributes: the model that answered and the prompt it was given. */
export interface SpanMade {
  readonly model: string;
  /** The prompt's name (Langfuse's, or the prompt file id). */
  readonly promptName: string;
  /** `<id>/v<N>`, `langfuse:<name>/v<N>` or the handler's version. */
  readonly promptVersion: string;
}

/** A prompt op whose model writes its response as JSON, validated against the op's response schema (the default). */
export interface JsonOpPrompt<Req, Res> extends PromptOpBase<Req, Res> {
  readonly output?: "json";
  readonly offline?: OfflineBehaviour<Req, Res>;
}

/**
 * A prompt op whose model writes free text (the model port's text mode), which `toOutput` turns
 * into the op's response. With `stream: true` its text also streams, in coalesced deltas, to the session's token
 * subject (`<p>.tokens.<sid>.<role>`) while the model writes: the streamed nodes (write,
 * finalize, summarize, agent, synthesize) say so, the others do not.
 */
export interface TextOpPrompt<Req, Res> extends PromptOpBase<Req, Res> {
  readonly output: "text";
  /** Publish the text's deltas as token messages while it is written (best-effort, never failing the task). */
  readonly stream?: boolean;
  /**
   * With `stream`: publish the text only when it is prose. An op whose model may instead reply
   * with a JSON object (a tool call the workflow runs) sets this, since clients show every token
   * as the answer: see `proseOnly`.
   */
  readonly streamOnlyProse?: boolean;
  /**
   * The op's response from the model's whole text (cut to `LIMITS.maxTextChars` and marked when
   * longer, see `cutModelText`: no more of it streamed); validated against the response schema, which
   * a failure answers as `model_invalid_output` (retryable: the text came from the model).
   */
  toOutput(text: string, input: Req): Res;
  /** The text the offline engine answers in the model's place (an op without one answers `needs_model`). */
  readonly offline?: OfflineBehaviour<Req, string>;
}

/** How one op talks to a model: its prompt file, prompt rendering, one-line summary and offline behaviour. */
export type OpPrompt<Req, Res> = JsonOpPrompt<Req, Res> | TextOpPrompt<Req, Res>;

/** A structured model call made from inside a handler op (e.g. the executor's summarize step). */
export interface HandlerModelCall<T> {
  readonly schema: SchemaRequest<T>["schema"];
  readonly schemaName: string;
  readonly prompt: string;
  /** Defaults to the op's prompt contract, if it has one. */
  readonly system?: string;
  /**
   * `structured` (default): validated with one validation retry. `json_object`: exactly one
   * exchange; output that is not valid JSON or fails the schema throws `model_invalid_output`,
   * not retryable, for the handler to turn into its own fallback.
   */
  readonly mode?: "structured" | "json_object";
  /** Overrides the configured temperature of the role (or role.op) for this call. */
  readonly temperature?: number;
  /** The model tier this call asks for, used when the configuration names no model for the role or op (the router's `fast`). */
  readonly tier?: Tier;
}

/** A free-text model call made from inside a handler op (the model port's text mode). */
export interface HandlerTextCall {
  readonly prompt: string;
  /** Defaults to the op's prompt contract, if it has one. */
  readonly system?: string;
  /** Publish the text's deltas as token messages while it is written (as a `stream: true` prompt op does). */
  readonly stream?: boolean;
  /** With `stream`: publish nothing when the reply is a JSON object rather than prose (see `proseOnly`). */
  readonly streamOnlyProse?: boolean;
  /** Overrides the configured temperature of the role (or role.op) for this call. */
  readonly temperature?: number;
  /** The model tier this call asks for, used when the configuration names no model for the role or op. */
  readonly tier?: Tier;
}

/** What a handler op gets besides its validated input. */
export interface HandlerContext {
  readonly taskId: string;
  readonly sessionId: string;
  readonly attempt: number;
  /** What the session may still use, counted by the coordinator (the executor's tool calls); absent on a direct call. */
  readonly allowance?: { readonly tool_calls: number };
  /** Aborted at the task deadline, on a session cancel or at shutdown: stop tool and model calls. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** The op's prompt contract, when it names one. */
  readonly prompt: PromptContract | null;
  /** Calls the model port; usage and model are added to the step's provenance. */
  complete<T>(call: HandlerModelCall<T>): Promise<T>;
  /** Calls the model port for free text (streamed live when `stream` is set), at most `LIMITS.maxTextChars` (see `cutModelText`); usage as for `complete`. */
  completeText(call: HandlerTextCall): Promise<string>;
  /** Adds attributes to the task's span (no-op when tracing is off). */
  annotate(attributes: SpanAttributeMap): void;
  /**
   * Runs `fn` in a child span of the task's (a tool call, a sandbox run), ended when it settles and
   * failed when it throws; with tracing off `fn` runs directly with a no-op span.
   */
  span<T>(
    name: string,
    attributes: SpanAttributeMap,
    fn: (span: SpanHandle) => Promise<T>,
    parent?: SpanHandle,
  ): Promise<T>;
  /** True when spans are recorded: compute costly attributes only then. */
  readonly tracing: boolean;
}

/**
 * An op that does deterministic work instead of (or before) a model call: the safe executor, a
 * pure fold, a search. Its output is validated against the contracts' response schema like a
 * model's; a thrown `AgentmeshError` becomes a typed failure, retried per its code.
 */
export interface OpHandler<Req, Res> {
  readonly kind: "handler";
  /**
   * An op whose workflow falls back at once when its model call fails (halo's capability planner,
   * the supervisor's router, clarify's orchestrator): each delivery sends one model request (no
   * retry of a 429, a 5xx, a timeout or invalid output), and any failure is reported at once as not
   * retryable, so the task is not redelivered.
   */
  readonly oneCall?: boolean;
  /** Version of the handler's logic, recorded as the prompt version when no contract is named. */
  readonly version: string;
  /** Id of the prompt contract documenting the op (and used by its model calls, if any). */
  readonly contract?: string;
  run(input: Req, ctx: HandlerContext): Promise<Res>;
  summarize(output: Res): string;
  /** Attributes for the task's span from a successful output (a decision record); called only when tracing is on. */
  spanAttributes?(input: Req, output: Res, made: SpanMade): SpanAttributeMap;
  /** The offline answer to the model call the handler makes (`ctx.complete`), if it makes one. */
  readonly offline?: OfflineBehaviour<Req, unknown>;
}

/** One op of a role: a model prompt (JSON or text), or a handler. */
export type OpSpec<Req, Res> = OpPrompt<Req, Res> | OpHandler<Req, Res>;

/** An agent role: each of its ops, as a prompt or a handler. The schemas come from the contracts' registry. */
export interface AgentDefinition<R extends RoleName = RoleName> {
  readonly role: R;
  readonly description: string;
  readonly ops: { readonly [O in OpName<R>]: OpSpec<OpRequest<R, O>, OpResponse<R, O>> };
}

/** Identity helper that type-checks an agent definition against the role registry. */
export function defineAgent<R extends RoleName>(def: AgentDefinition<R>): AgentDefinition<R> {
  return def;
}

/** True for a handler op. */
export function isHandler<Req, Res>(op: OpSpec<Req, Res>): op is OpHandler<Req, Res> {
  return op.kind === "handler";
}

/** True for a prompt op whose model writes free text. */
export function isTextPrompt<Req, Res>(op: OpSpec<Req, Res>): op is TextOpPrompt<Req, Res> {
  return op.kind !== "handler" && op.output === "text";
}
