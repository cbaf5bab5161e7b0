import { agentMain } from "@agentmesh/agent-kit";
import { finalizer } from "./definition.js";

// Wiring only: configuration, dependencies and lifecycle live in agent-kit.
await agentMain([finalizer], process.env, "finalizer");
