export type { ModelPort, ModelReply, ModelRequest, ModelFailure, RoleModelConfig } from "./types.js";
