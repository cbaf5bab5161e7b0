import { agentMain } from "@agentmesh/agent-kit";
import { loadExecutorConfig } from "./config.js";
import { createExecutor } from "./definition.js";

// Wiring only: config → the tool registry and safe executor → the role, run until SIGTERM.
await agentMain((env, log) => createExecutor(loadExecutorConfig(env), log), process.env, "executor");
