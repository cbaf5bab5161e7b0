import { agentMain } from "@agentmesh/agent-kit";
import { researcher } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([researcher], process.env, "researcher");
