export {
  defineAgent,
  type AgentDefinition,
  type OpPrompt,
  type JsonOpPrompt,
  type TextOpPrompt,
  type OpHandler,
  type HandlerContext,
  type HandlerModelCall,
  type HandlerTextCall,
  type OfflineBehaviour,
  type OfflineContext,
} from "./definition.js";
export { startAgent, createOpRunner, type AgentOptions, type OpRunnerOptions, type RunningAgent } from "./agent.js";
export type { TokenSink } from "./tokens.js";
export { loadAgentConfig, type AgentConfig } from "./config.js";
export {
  startAgentsInProcess,
  defineRoleSetup,
  setUpRole,
  type AgentSetup,
  type AgentSetupFactory,
  type RoleModule,
  type RunningAgents,
} from "./main.js";
export { offlineHandlersOf } from "./offline.js";
export { PromptContract, loadPromptContracts, type LoadedContract } from "./prompts.js";
export { renderConversation, type ConversationView } from "./render.js";
export {
  FILE_PROMPTS,
  compileTemplate,
  createLangfusePromptSource,
  type LangfuseOptions,
  type PromptSource,
  type ResolvedPrompt,
} from "./prompt-source.js";
