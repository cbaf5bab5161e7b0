import type { Tier } from "@agentmesh/contracts";
import { createOfflineModel, type OfflineHandler } from "./offline.js";
import { createOpenAIModel, type ModelPrice } from "./openai.js";
import type { ModelPort, RoleModelConfig } from "./types.js";

/** Model settings as a service's config hands them over (it, not this library, reads the env). */
export interface ModelConfig {
  /** The OpenAI-compatible endpoint; unset or empty means the offline engine. */
  readonly baseURL?: string | undefined;
  readonly apiKey?: string | undefined;
  readonly roles: Readonly<Record<string, RoleModelConfig>>;
  readonly defaultRole: RoleModelConfig;
  /** Settings per tier, for ops that ask for one (the router's `fast`) and whose role and op `roles` does not name. */
  readonly tiers?: Readonly<Partial<Record<Tier, RoleModelConfig>>>;
  readonly timeoutMs: number;
  readonly maxHttpAttempts: number;
  readonly prices: Readonly<Record<string, ModelPrice>>;
  /** Quoted by the offline engine when a question needs a model (how to configure one). */
  readonly offlineConfigHint?: string;
  /** The offline behaviours of the roles this process runs, keyed `<role>.<op>`. */
  readonly offlineHandlers?: ReadonlyMap<string, OfflineHandler>;
  /** Test and bench knob: how long each offline answer takes (default 0); ignored with an endpoint. */
  readonly offlineLatencyMs?: number;
}

/** The OpenAI-compatible adapter when an endpoint is configured, else the offline engine. */
export function createModelFromConfig(config: ModelConfig): ModelPort {
  if (config.baseURL === undefined || config.baseURL.trim() === "") {
    return createOfflineModel({
      ...(config.offlineConfigHint === undefined ? {} : { configHint: config.offlineConfigHint }),
      ...(config.offlineHandlers === undefined ? {} : { handlers: config.offlineHandlers }),
      ...(config.offlineLatencyMs === undefined ? {} : { latencyMs: config.offlineLatencyMs }),
    });
  }
  return createOpenAIModel({
    baseURL: config.baseURL,
    ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
    roles: config.roles,
    defaultRole: config.defaultRole,
    ...(config.tiers === undefined ? {} : { tiers: config.tiers }),
    timeoutMs: config.timeoutMs,
    maxHttpAttempts: config.maxHttpAttempts,
    prices: config.prices,
  });
}
