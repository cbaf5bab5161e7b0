export { ask, services, inspect, cancel, health, sessions, stuckReason } from "./commands.js";
export { loadCliConfig, type CliConfig } from "./config.js";
