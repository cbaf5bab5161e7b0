export { ask, services, inspect, cancel, health } from "./commands.js";
export { loadCliConfig, type CliConfig } from "./config.js";
