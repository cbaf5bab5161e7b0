// The one front door of @agentmesh/gateway: the HTTP API, SSE, the OpenAI-compatible endpoint and the web page.
export {
  ANONYMOUS_OWNER,
  apiKeyEntry,
  generateApiKey,
  keyNameProblem,
  parseApiKeys,
  presentedApiKey,
  type ApiKeySources,
  type ApiKeyVerifier,
} from "./api-keys.js";
export {
  createRedisLimits,
  type Admission,
  type GatewayLimits,
  type IsLive,
  type LimitsOptions,
  type RateDecision,
} from "./limits.js";
export { loadGatewayConfig, type GatewayConfig } from "./config.js";
export { createGatewayApp, type GatewayApp, type GatewayDeps } from "./app.js";
export { gatewayMain } from "./main-wiring.js";
export { API_ERRORS } from "./http.js";
export { SESSION_RESULT_FIELDS } from "./sessions.js";
