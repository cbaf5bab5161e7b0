export { createExecutor } from "./definition.js";
export { loadExecutorConfig, type ExecutorConfig } from "./config.js";
