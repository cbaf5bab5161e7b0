import { agentMain } from "@agentmesh/agent-kit";
import { loadRetrieverConfig } from "./config.js";
import { createRetriever } from "./definition.js";

// Wiring only: config → the retriever's search tools → the role, run until SIGTERM.
await agentMain((env, log) => createRetriever(loadRetrieverConfig(env), log), process.env, "retriever");
