import type { z } from "zod";
import type { Tier, Usage } from "@agentmesh/contracts";

/** What every model call carries, whatever its output mode. */
interface ModelCall {
  readonly role: string;
  readonly op: string;
  /** Deterministic task id: scripted models key their answers on it. */
  readonly taskId: string;
  /** The role's instructions (system prompt). */
  readonly system: string;
  /** The rendered user message. */
  readonly prompt: string;
  /** The structured task input, by value (the offline engine and scripted models read it). */
  readonly input: unknown;
  /** Overrides the configured temperature of the role (or role.op) for this call, e.g. 0 for a deterministic planner. */
  readonly temperature?: number;
  /**
   * The model tier the op asks for (the router's `fast`): its settings are used when the
   * configuration names none for the role or the op; absent = the default role's.
   */
  readonly tier?: Tier;
  readonly signal?: AbortSignal;
  /**
   * One request for this call: a transport failure (429, 5xx, a timeout) and invalid output are
   * not retried; only a rejected structured-output format may still be probed with the next one.
   * For the ops that fall back at once when their one model call fails.
   */
  readonly oneRequest?: boolean;
  /** Called with each streamed text delta, in order (text mode always streams; the others only when this is set). */
  readonly onToken?: (delta: string) => void;
}

/** A call whose reply is a JSON object validated against `schema`. */
interface SchemaCall<T> extends ModelCall {
  /** The output schema; the reply is validated against it. */
  readonly schema: z.ZodType<T>;
  /** A name for the schema (strict JSON-schema `name`). */
  readonly schemaName: string;
}

/** `structured` (the default): best format the endpoint supports (json_schema → json_object → prompt), validated, one validation retry; fails `model_invalid_output` retryable. */
export interface StructuredRequest<T> extends SchemaCall<T> {
  readonly mode?: "structured";
}

/** `json_object`: one exchange with `response_format: json_object`, validated once, no validation retry; invalid output fails `model_invalid_output` NOT retryable, so the caller can fall back. */
export interface JsonObjectRequest<T> extends SchemaCall<T> {
  readonly mode: "json_object";
}

/** `text`: free text, streamed delta by delta to `onToken`; no schema, the output is the whole text; a stream that broke after deltas were delivered is not retried within the call. */
export interface TextRequest extends ModelCall {
  readonly mode: "text";
}

/** A request with a schema: its output is `T`. */
export type SchemaRequest<T> = StructuredRequest<T> | JsonObjectRequest<T>;

/** One call to a model on behalf of an agent task; `mode` says what the output is and how hard the port tries. */
export type ModelRequest<T = unknown> = SchemaRequest<T> | TextRequest;

/** The output modes, `structured` when a request names none. */
export type ModelMode = NonNullable<ModelRequest["mode"]>;

/** A validated answer with what it cost and where it came from. */
export interface ModelReply<T> {
  readonly output: T;
  readonly usage: Usage;
  readonly model: string;
  readonly tier: Tier;
  readonly latencyMs: number;
  /** The temperature the model was asked for (absent: none applies, e.g. the offline engine). */
  readonly temperature?: number;
}

/** The model port: the OpenAI-compatible adapter, the offline engine and the scripted model. */
export interface ModelPort {
  readonly name: string;
  /** Structured or json_object: the reply parsed and validated against the request's schema. */
  complete<T>(req: SchemaRequest<T>): Promise<ModelReply<T>>;
  /** Text: the whole streamed reply. */
  complete(req: TextRequest): Promise<ModelReply<string>>;
}

/** Per-role (or per `<role>.<op>`) model settings. */
export interface RoleModelConfig {
  readonly model: string;
  readonly temperature: number;
  readonly tier: Tier;
}
