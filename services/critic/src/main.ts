import { agentMain } from "@agentmesh/agent-kit";
import { critic } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([critic], process.env, "critic");
