import { agentMain } from "@agentmesh/agent-kit";
import { planner } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([planner], process.env, "planner");
