import { agentMain } from "@agentmesh/agent-kit";
import { memory } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([memory], process.env, "memory");
