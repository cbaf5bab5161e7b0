import { agentMain } from "@agentmesh/agent-kit";
import { decision } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([decision], process.env, "decision");
