import { agentMain } from "@agentmesh/agent-kit";
import { expert } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([expert], process.env, "expert");
