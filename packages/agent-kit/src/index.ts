export { defineAgent, type AgentDefinition, type OpPrompt } from "./definition.js";
export { startAgent, createOpRunner, type AgentOptions, type RunningAgent } from "./agent.js";
export { loadAgentConfig, type AgentConfig } from "./config.js";
export { agentMain, startAgentsInProcess } from "./main.js";
