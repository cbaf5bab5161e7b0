export { ask, services, inspect, cancel } from "./commands.js";
export { loadCliConfig, type CliConfig } from "./config.js";
