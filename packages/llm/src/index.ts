export type {
  ModelPort,
  ModelReply,
  ModelRequest,
  ModelMode,
  SchemaRequest,
  StructuredRequest,
  JsonObjectRequest,
  TextRequest,
  RoleModelConfig,
} from "./types.js";
export {
  createOpenAIModel,
  maxModelRequestsPerCall,
  DEFAULT_MAX_HTTP_ATTEMPTS,
  type OpenAIModelOptions,
  type ModelPrice,
  type StructuredMode,
} from "./openai.js";
export {
  createOfflineModel,
  offlineKey,
  DEFAULT_CONFIG_HINT,
  type OfflineHandler,
  type OfflineModelOptions,
} from "./offline.js";
export { createModelFromConfig, type ModelConfig } from "./config.js";
export { toStrictJsonSchema } from "./structured.js";
