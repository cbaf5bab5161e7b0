export type {
  ModelPort,
  ModelReply,
  ModelRequest,
  ModelMode,
  SchemaRequest,
  StructuredRequest,
  JsonObjectRequest,
  TextRequest,
  ModelFailure,
  RoleModelConfig,
} from "./types.js";
export { ModelError, MODEL_ERROR_CODES, isModelError, toModelFailure, type ModelErrorCode } from "./errors.js";
export {
  createOpenAIModel,
  maxModelRequestsPerCall,
  DEFAULT_MAX_HTTP_ATTEMPTS,
  type OpenAIModelOptions,
  type ModelPrice,
  type StructuredMode,
} from "./openai.js";
export { createOfflineModel, DEFAULT_CONFIG_HINT, type OfflineModelOptions } from "./offline.js";
export { createModelFromConfig, type ModelConfig } from "./config.js";
export { toStrictJsonSchema } from "./structured.js";
export { SummaryDraft, numberedSources } from "./offline-answer.js";
