export { ask, answer, services, inspect, cancel, health, sessions, stuckReason, deadLetters } from "./commands.js";
export { loadCliConfig, type CliConfig } from "./config.js";
