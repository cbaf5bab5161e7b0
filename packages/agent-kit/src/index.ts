export {
  defineAgent,
  type AgentDefinition,
  type OpPrompt,
  type OpHandler,
  type HandlerContext,
  type HandlerModelCall,
  type OfflineBehaviour,
  type OfflineContext,
} from "./definition.js";
export { startAgent, createOpRunner, type AgentOptions, type RunningAgent } from "./agent.js";
export { loadAgentConfig, type AgentConfig } from "./config.js";
export { startAgentsInProcess, defineRoleSetup, setUpRole, type AgentSetup, type AgentSetupFactory, type RoleModule } from "./main.js";
export { offlineHandlersOf } from "./offline.js";
export { PromptContract, loadPromptContracts, type LoadedContract } from "./prompts.js";
