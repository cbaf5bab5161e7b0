import type { z } from "zod";
import type { Tier, Usage } from "@agentmesh/contracts";

/** One structured call to a model on behalf of an agent task. */
export interface ModelRequest<T> {
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
  /** The output schema; the reply is validated against it. */
  readonly schema: z.ZodType<T>;
  /** A name for the schema (strict JSON-schema `name`). */
  readonly schemaName: string;
  readonly signal?: AbortSignal;
  /** Called with each streamed text delta, when the adapter streams. */
  readonly onToken?: (delta: string) => void;
}

/** A validated answer with what it cost and where it came from. */
export interface ModelReply<T> {
  readonly output: T;
  readonly usage: Usage;
  readonly model: string;
  readonly tier: Tier;
  readonly latencyMs: number;
}

/** The model port: the OpenAI-compatible adapter, the offline engine and the scripted model. */
export interface ModelPort {
  readonly name: string;
  complete<T>(req: ModelRequest<T>): Promise<ModelReply<T>>;
}

/** Per-role model settings. */
export interface RoleModelConfig {
  readonly model: string;
  readonly temperature: number;
  readonly tier: Tier;
}
