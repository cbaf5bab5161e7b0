export { defineAgent, type AgentDefinition, type OpPrompt, type OpHandler, type HandlerContext, type HandlerModelCall } from "./definition.js";
export { startAgent, createOpRunner, type AgentOptions, type RunningAgent } from "./agent.js";
export { loadAgentConfig, type AgentConfig } from "./config.js";
export { agentMain, startAgentsInProcess, type AgentSetup, type AgentSetupFactory } from "./main.js";
export { PromptContract, loadPromptContracts } from "./prompts.js";
