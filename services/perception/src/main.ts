import { agentMain } from "@agentmesh/agent-kit";
import { perception } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([perception], process.env, "perception");
